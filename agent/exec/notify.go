package exec

import (
	"context"
	"strings"
	"time"
	"unicode"
)

// The variables naming a replica's notify socket (a notify health check,
// api.NotifyCheck): both name the same unix datagram socket, NOTIFY_SOCKET
// so that programs using sd_notify(3) (or systemd-notify) need nothing
// jaco-specific.
const (
	EnvNotifySocket        = "JACO_NOTIFY_SOCKET"
	EnvSystemdNotifySocket = "NOTIFY_SOCKET"
)

// MaxNotifyStatus bounds the STATUS= text kept of one message: it ends up
// in the replica's status message, which goes through raft.
const MaxNotifyStatus = 256

// Notification is one datagram a replica sent on its notify socket, in
// sd_notify's format: newline-separated KEY=VALUE assignments. Keys jaco
// does not know are ignored, as systemd does.
type Notification struct {
	// Ready is READY=1: the replica is up.
	Ready bool
	// Watchdog is WATCHDOG=1: the replica is alive.
	Watchdog bool
	// WatchdogTrigger is WATCHDOG=trigger: the replica asks to be
	// treated as failed now.
	WatchdogTrigger bool
	// Status is the text of STATUS=, one line of at most MaxNotifyStatus
	// bytes; "" when the message has none.
	Status string
	// Replayed is set on a Ready the runtime remembered from before the
	// agent restarted, rather than one just received.
	Replayed bool
	At       time.Time
}

// ParseNotification reads one datagram.
func ParseNotification(datagram []byte, at time.Time) Notification {
	n := Notification{At: at}
	for line := range strings.SplitSeq(string(datagram), "\n") {
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch key {
		case "READY":
			n.Ready = n.Ready || value == "1"
		case "WATCHDOG":
			n.Watchdog = n.Watchdog || value == "1"
			n.WatchdogTrigger = n.WatchdogTrigger || value == "trigger"
		case "STATUS":
			n.Status = cleanStatus(value)
		}
	}
	return n
}

// cleanStatus makes the text safe to show: control characters become
// spaces, and it is cut to MaxNotifyStatus bytes on a rune boundary.
func cleanStatus(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) <= MaxNotifyStatus {
		return s
	}
	cut := MaxNotifyStatus
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// Notifier is implemented by a Controller whose replica can report its
// own readiness and liveness over a notify socket (the hooks runtime,
// for a spec with a notify health check).
type Notifier interface {
	// Notifications returns the messages the replica sends from now on,
	// until ctx ends, when the channel closes. It must be called after
	// Start (or on an adopted replica); messages sent between Start and
	// this call are kept. A Ready received before an agent restart is
	// given again first, marked Replayed. Messages sent while no agent
	// listens are lost.
	Notifications(ctx context.Context) (<-chan Notification, error)
}
