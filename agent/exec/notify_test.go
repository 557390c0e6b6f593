package exec

import (
	"strings"
	"testing"
	"time"
)

func TestParseNotification(t *testing.T) {
	at := time.Now()
	for _, tc := range []struct {
		in   string
		want Notification
	}{
		{"READY=1", Notification{Ready: true}},
		{"READY=1\nSTATUS=serving 12 clients\n", Notification{Ready: true, Status: "serving 12 clients"}},
		{"WATCHDOG=1", Notification{Watchdog: true}},
		{"WATCHDOG=trigger", Notification{WatchdogTrigger: true}},
		{"READY=0\nWATCHDOG=0\nMAINPID=7\nnonsense", Notification{}},
		{"STATUS=a\tb\x1b[31mred", Notification{Status: "a b [31mred"}},
	} {
		tc.want.At = at
		if got := ParseNotification([]byte(tc.in), at); got != tc.want {
			t.Errorf("ParseNotification(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
	long := ParseNotification([]byte("STATUS="+strings.Repeat("é", MaxNotifyStatus)), at).Status
	if len(long) > MaxNotifyStatus || !strings.HasPrefix(long, "éé") || strings.ContainsRune(long, '\uFFFD') {
		t.Fatalf("long status cut to %d bytes: %q", len(long), long)
	}
}
