package dispatcher

import (
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// What an agent says about its node is bounded: a runtime list without
// end or with odd names is refused; the machine's hostname and the
// isolation message, free text, are stored cut and printable.
func TestSessionDescriptionBounds(t *testing.T) {
	h := newHarness(t, workerNode("n1"))
	h.run()
	for _, d := range []*api.NodeDescription{
		{Hostname: "w1", Runtimes: []string{"hooks", "evil\nname"}},
		{Hostname: "w1", Runtimes: strings.Split(strings.Repeat("r,", 20), ",")},
		{Hostname: "w1", Overlay: &api.OverlayEndpoint{PublicKey: []byte("short"), Port: 51820, Kind: "userspace"}},
		{Hostname: "w1", Overlay: &api.OverlayEndpoint{PublicKey: make([]byte, 32), Port: 70000, Kind: "userspace"}},
		{Hostname: "w1", Overlay: &api.OverlayEndpoint{PublicKey: make([]byte, 32), Port: 51820, Kind: "magic"}},
	} {
		c, ctx := h.client(nodeID("n1"))
		stream, err := c.Session(ctx, &api.SessionRequest{Description: d})
		if err == nil {
			_, err = stream.Recv()
		}
		if reason.Of(err) != reason.InvalidSpec {
			t.Errorf("session with description %.60q: %v, want invalid_spec", d.String(), err)
		}
	}
	if got := h.node("n1").GetDescription(); got != nil {
		t.Fatalf("a refused session stored a description: %v", got)
	}
	h.openSession("n1", &api.NodeDescription{Hostname: "w1\x1b[2J" + strings.Repeat("a", 1<<20), IsolationUnavailable: true,
		IsolationMessage: "nft: \x1b[31mfailed\n" + strings.Repeat("x", 5000)})
	h.eventually("the description stored", func() (bool, string) {
		m := h.node("n1").GetDescription().GetIsolationMessage()
		return m != "", m
	})
	m := h.node("n1").GetDescription().GetIsolationMessage()
	if len(m) > maxIsolationBytes+len("…") || strings.ContainsAny(m, "\x1b\n") || !strings.HasPrefix(m, "nft:  [31mfailed ") {
		t.Errorf("isolation message stored as %.80q (%d bytes), want it cut to %d bytes with control characters replaced", m, len(m), maxIsolationBytes)
	}
	if host := h.node("n1").GetDescription().GetHostname(); len(host) > 256 || !strings.HasPrefix(host, "w1 [2Jaaa") {
		t.Errorf("machine hostname stored as %.40q (%d bytes), want it cut and printable", host, len(host))
	}
}
