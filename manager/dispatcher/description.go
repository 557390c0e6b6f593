package dispatcher

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/nodename"
	"github.com/jaco-project/jaco/api/reason"
)

// Bounds on what an agent says about its node. The description is stored
// on the Node, held by every manager and printed by node ls and status.
const (
	maxRuntimes       = 8
	maxRuntimeName    = 32
	maxIsolationBytes = 1024
)

// checkDescription refuses a node description whose runtime list is odd
// or without end (the agent's own fixed names), and returns it with its
// free text made printable and bounded: the machine's hostname (the OS
// allows names a node name may not hold; the Node's own hostname, checked
// at join, is what jaco shows and places by) and the isolation message,
// from the node's firewall errors.
func checkDescription(d *api.NodeDescription) (*api.NodeDescription, error) {
	if d == nil {
		return nil, nil
	}
	if err := checkRuntimes(d); err != nil {
		return nil, err
	}
	if err := checkOverlay(d.GetOverlay()); err != nil {
		return nil, err
	}
	host, msg := printable(d.GetHostname(), nodename.MaxLen), printable(d.GetIsolationMessage(), maxIsolationBytes)
	overlayMsg := printable(d.GetOverlay().GetMessage(), maxIsolationBytes)
	if host == d.GetHostname() && msg == d.GetIsolationMessage() && overlayMsg == d.GetOverlay().GetMessage() {
		return d, nil
	}
	d = proto.CloneOf(d)
	d.Hostname, d.IsolationMessage = host, msg
	if d.Overlay != nil {
		d.Overlay.Message = overlayMsg
	}
	return d, nil
}

// checkOverlay refuses an overlay endpoint other nodes could not use: a
// key that is no WireGuard key, a port that is none, an unknown kind.
func checkOverlay(o *api.OverlayEndpoint) error {
	if o == nil || o.GetUnavailable() {
		return nil
	}
	if len(o.GetPublicKey()) != 32 {
		return reason.Error(codes.InvalidArgument, reason.InvalidSpec, "node description: overlay public key of %d bytes, want 32", len(o.GetPublicKey()))
	}
	if o.GetPort() == 0 || o.GetPort() > 65535 {
		return reason.Error(codes.InvalidArgument, reason.InvalidSpec, "node description: overlay port %d", o.GetPort())
	}
	if k := o.GetKind(); k != "kernel" && k != "userspace" {
		return reason.Error(codes.InvalidArgument, reason.InvalidSpec, "node description: overlay kind %q, want kernel or userspace", printable(k, 32))
	}
	return nil
}

// printable is s as valid UTF-8 with control characters replaced by
// spaces, cut to max bytes (marked with "…").
func printable(s string, max int) string {
	if len(s) <= max && utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	s = strings.Map(func(c rune) rune {
		if unicode.IsControl(c) {
			return ' '
		}
		return c
	}, strings.ToValidUTF8(s, "?"))
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "…"
	}
	return s
}

func checkRuntimes(d *api.NodeDescription) error {
	if n := len(d.GetRuntimes()); n > maxRuntimes {
		return reason.Error(codes.InvalidArgument, reason.InvalidSpec, "node description: %d runtimes, at most %d", n, maxRuntimes)
	}
	for _, r := range d.GetRuntimes() {
		if len(r) == 0 || len(r) > maxRuntimeName || strings.ContainsFunc(r, func(c rune) bool {
			return !(c == '-' || c == '_' || c == '.' || unicode.IsLetter(c) || unicode.IsDigit(c)) || c > unicode.MaxASCII
		}) {
			return reason.Error(codes.InvalidArgument, reason.InvalidSpec, "node description: runtime name %q", r)
		}
	}
	return nil
}
