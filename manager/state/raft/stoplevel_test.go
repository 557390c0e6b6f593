package raft

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"
)

// A member that applied its own removal (a demotion, or a removal the
// daemon reports as node_removed) stops at INFO; every other failure is an
// ERROR for the operator.
func TestStopLevel(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want slog.Level
	}{
		{ErrRemoved, slog.LevelInfo},
		{fmt.Errorf("apply conf change: %w", ErrRemoved), slog.LevelInfo},
		{errors.New("save to wal: no space left on device"), slog.LevelError},
	} {
		if got := stopLevel(tc.err); got != tc.want {
			t.Errorf("stopLevel(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
