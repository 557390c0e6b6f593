package grpcflow

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestNoPingsPerMessage: with the package's options on both ends, a
// connection carrying one call after another sends no PING frames either
// way; with gRPC's defaults the same calls send some (the control, so the
// count can fail). Each such ping is a frame, a write and a wakeup on
// both sides.
func TestNoPingsPerMessage(t *testing.T) {
	const calls = 50
	client, server := pingsSent(t, calls, ServerOptions(), DialOptions())
	if client != 0 || server != 0 {
		t.Errorf("with static windows: %d pings from the client, %d from the server over %d calls; want none", client, server, calls)
	}
	client, server = pingsSent(t, calls, nil, nil)
	if client+server == 0 {
		t.Errorf("with gRPC's defaults: no pings over %d calls; the count cannot tell the options apart", calls)
	}
}

// pingsSent makes calls unary calls, one after another, from a client
// with dopts to a server with sopts, and counts the PING frames (not
// acknowledgements) each side wrote.
func pingsSent(t *testing.T, calls int, sopts []grpc.ServerOption, dopts []grpc.DialOption) (client, server int) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var fromServer, fromClient tap
	srv := grpc.NewServer(sopts...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(&tapListener{Listener: lis, tap: &fromServer})
	}()
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return &tapConn{Conn: c, tap: &fromClient}, nil
	}
	conn, err := grpc.NewClient("passthrough:///"+lis.Addr().String(), append(dopts,
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithContextDialer(dial))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hc := healthpb.NewHealthClient(conn)
	for range calls {
		if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	_ = conn.Close()
	srv.Stop()
	<-served
	return fromClient.pings(t, len(http2.ClientPreface)), fromServer.pings(t, 0)
}

// tap keeps what one side of a connection wrote.
type tap struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (tp *tap) write(p []byte) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.buf.Write(p)
}

// pings reads the frames written after skip bytes and counts the PINGs
// that are not acknowledgements.
func (tp *tap) pings(t *testing.T, skip int) int {
	t.Helper()
	tp.mu.Lock()
	defer tp.mu.Unlock()
	fr := http2.NewFramer(nil, bytes.NewReader(tp.buf.Bytes()[skip:]))
	n := 0
	for {
		f, err := fr.ReadFrame()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return n
		}
		if err != nil {
			t.Fatalf("read the frames written: %v", err)
		}
		if p, ok := f.(*http2.PingFrame); ok && !p.IsAck() {
			n++
		}
	}
}

type tapConn struct {
	net.Conn
	tap *tap
}

func (c *tapConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.tap.write(p[:n])
	return n, err
}

type tapListener struct {
	net.Listener
	tap *tap
}

func (l *tapListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &tapConn{Conn: c, tap: l.tap}, nil
}
