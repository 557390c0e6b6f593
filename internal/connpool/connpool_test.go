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

// TestKeepClosesTheOthers: Keep closes the connections to the addresses it
// is not given and leaves the others shared.
func TestKeepClosesTheOthers(t *testing.T) {
	p := New(func(addr string) (*grpc.ClientConn, error) {
		return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	})
	kept, _ := p.Get("127.0.0.1:1")
	gone, _ := p.Get("127.0.0.1:2")
	p.Keep([]string{"127.0.0.1:1", "127.0.0.1:3"})
	if s := gone.GetState(); s != connectivity.Shutdown {
		t.Fatalf("the connection Keep was not given is %s, want SHUTDOWN", s)
	}
	if again, _ := p.Get("127.0.0.1:1"); again != kept || kept.GetState() == connectivity.Shutdown {
		t.Fatal("Keep closed or replaced a connection it was given")
	}
	if fresh, _ := p.Get("127.0.0.1:2"); fresh == gone {
		t.Fatal("Get after Keep returned the closed connection")
	}
	p.CloseAll()
}
