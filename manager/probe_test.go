package manager

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// A probe's call to a peer that does not answer (paused, or cut off) ends
// with the probe's context, which the manager's stop cancels, rather than
// at the call's own limit: the stop waits for the probe.
func TestProbeCallEndsWithItsContext(t *testing.T) {
	m, _, _ := openTestManager(t)
	// A peer that takes the connection and never says a word.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	m.dial = func(addr string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
		return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	ctx, cancel := context.WithCancel(context.Background())
	asked := make(chan bool, 1)
	go func() { asked <- m.askPeer(ctx, lis.Addr().String()) }()
	cancel()
	select {
	case removed := <-asked:
		if removed {
			t.Error("a peer that never answered said this member was removed")
		}
	case <-time.After(probeCallLimit / 2):
		t.Fatalf("the call went on after its context ended (its own limit is %v)", probeCallLimit)
	}
}
