package netplane

import (
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/jaco-project/jaco/api"
)

// A link that keeps failing makes the node describe its overlay as
// unavailable, saying why, and describe it again once the link works; the
// agent is asked to send the description at each change only.
func TestBrokenLinkIsDescribedUnavailable(t *testing.T) {
	var asked atomic.Int32
	o := &overlayLink{log: slog.New(slog.DiscardHandler), redescribe: func() { asked.Add(1) },
		endpoint: &api.OverlayEndpoint{PublicKey: make([]byte, 32), Port: 51820, Kind: "userspace"}}
	if d := o.describe(); d.GetUnavailable() || d.GetPort() != 51820 {
		t.Fatalf("working link described as %v", d)
	}
	o.setBroken("open /dev/net/tun: no such device")
	o.setBroken("open /dev/net/tun: no such device")
	d := o.describe()
	if !d.GetUnavailable() || d.GetMessage() != "overlay link broken: open /dev/net/tun: no such device" || len(d.GetPublicKey()) != 32 {
		t.Fatalf("broken link described as %v", d)
	}
	if asked.Load() != 1 {
		t.Fatalf("agent asked to describe the node %d times for one change", asked.Load())
	}
	o.setBroken("")
	if d := o.describe(); d.GetUnavailable() || asked.Load() != 2 {
		t.Fatalf("mended link described as %v after %d requests", d, asked.Load())
	}
}
