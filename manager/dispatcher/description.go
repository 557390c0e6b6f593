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

// checkDescription refuses a node description that could print terminal
// codes or grow the store without bound (a hostname that is no host name,
// too many or odd runtime names), and returns it with its isolation
// message, free text from the node's firewall errors, cut to a bound and
// with control characters replaced.
func checkDescription(d *api.NodeDescription) (*api.NodeDescription, error) {
	if d == nil {
		return nil, nil
	}
	if err := checkNames(d); err != nil {
		return nil, err
	}
	m := d.GetIsolationMessage()
	if len(m) <= maxIsolationBytes && utf8.ValidString(m) && !strings.ContainsFunc(m, unicode.IsControl) {
		return d, nil
	}
	d = proto.CloneOf(d)
	m = strings.ToValidUTF8(m, "?")
	m = strings.Map(func(c rune) rune {
		if unicode.IsControl(c) {
			return ' '
		}
		return c
	}, m)
	if len(m) > maxIsolationBytes {
		m = strings.ToValidUTF8(m[:maxIsolationBytes], "") + "…"
	}
	d.IsolationMessage = m
	return d, nil
}

func checkNames(d *api.NodeDescription) error {
	if h := d.GetHostname(); h != "" {
		if err := nodename.Check(h); err != nil {
			return reason.Error(codes.InvalidArgument, reason.InvalidSpec, "node description: hostname: %v", err)
		}
	}
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
