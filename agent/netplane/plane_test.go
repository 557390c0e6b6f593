package netplane

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jaco-project/jaco/agent/overlay"
	"github.com/jaco-project/jaco/api"
)

// A node with the overlay turned off publishes it unavailable, saying
// why, makes no key, ignores the store's overlay ends, and its plane's
// Run returns once its context ends.
func TestPlaneWithoutOverlay(t *testing.T) {
	key := filepath.Join(t.TempDir(), "overlay.key")
	p := New(Config{NodeID: "node-a", KeyPath: key, NoOverlay: true, Logger: slog.New(slog.DiscardHandler),
		Sealer: func() (overlay.Sealer, error) { t.Error("sealer asked for an overlay that is off"); return nil, nil }})
	var d api.NodeDescription
	p.Describe(&d)
	if !d.GetOverlay().GetUnavailable() || d.GetOverlay().GetMessage() != "the overlay is turned off on this node (jacod --overlay=false)" {
		t.Fatalf("overlay described as %v", d.GetOverlay())
	}
	if _, err := os.Stat(key); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("key file of an overlay that is off: %v, want none", err)
	}
	p.FollowOverlay(&api.Node{Id: "node-a"}, []*api.OverlayPeer{{NodeId: "node-b", PublicKey: make([]byte, 32)}})
	if len(p.link.want) != 0 {
		t.Fatal("overlay ends queued for a link that is off")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	st, err := p.OverlayStatus(ctx)
	if err != nil || !st.GetEndpoint().GetUnavailable() || len(st.GetPeers()) != 0 {
		t.Fatalf("status of an overlay that is off: %v, %v", st, err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run still running 5 s after its context ended")
	}
}
