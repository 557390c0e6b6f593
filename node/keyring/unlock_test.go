package keyring

import (
	"testing"
	"time"
)

func TestUnlockDelayDoublesToACap(t *testing.T) {
	for _, tc := range []struct {
		failed uint32
		want   time.Duration
	}{
		{0, 0}, {FreeUnlockAttempts - 1, 0},
		{FreeUnlockAttempts, FirstUnlockDelay}, {FreeUnlockAttempts + 1, 2 * FirstUnlockDelay},
		{FreeUnlockAttempts + 3, 8 * FirstUnlockDelay}, {FreeUnlockAttempts + 40, MaxUnlockDelay},
		{^uint32(0), MaxUnlockDelay},
	} {
		if got := unlockDelay(tc.failed); got != tc.want {
			t.Errorf("unlockDelay(%d) = %s, want %s", tc.failed, got, tc.want)
		}
	}
}
