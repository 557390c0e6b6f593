package connpool

import (
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
)

// TestOneConnectionPerAddressUntilCloseAll: callers share the connection to
// an address; CloseAll closes it and the next Get opens a fresh one.
func TestOneConnectionPerAddressUntilCloseAll(t *testing.T) {
	dials := 0
	p := New(func(addr string) (*grpc.ClientConn, error) {
		dials++
		return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	})
	a1, err := p.Get("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := p.Get("127.0.0.1:1")
	b, _ := p.Get("127.0.0.1:2")
	if a1 != a2 || a1 == b || dials != 2 {
		t.Fatalf("same address shared: %v, addresses apart: %v, dials %d (want 2)", a1 == a2, a1 != b, dials)
	}
	p.CloseAll()
	if s := a1.GetState(); s != connectivity.Shutdown {
		t.Fatalf("after CloseAll the old connection is %s, want SHUTDOWN", s)
	}
	a3, _ := p.Get("127.0.0.1:1")
	if a3 == a1 || dials != 3 {
		t.Fatalf("after CloseAll Get reused the closed connection (dials %d)", dials)
	}
	p.CloseAll()
}
