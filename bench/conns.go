package main

// `jaco-bench conns` measures what a bare gRPC server holds for each
// node's connection, as the floor under a manager's memory per node
// (docs/bench/largestore.md): a server with nothing behind it but gRPC's
// health service, on the transport jacod's TCP server uses (TLS 1.3 with
// client certificates, no read buffer over TLS's, static flow-control
// windows on both ends: grpcflow), and COUNT client connections from a
// child process, each holding two server streams open as a node's
// session and assignments streams do. --streams and --read-buffer measure
// the same floor for other shapes.
// The server's growth in heap in use, goroutines and RSS, divided by COUNT,
// is what any manager keeping one such connection per node pays at
// least, before it stores or does anything for the node.

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/internal/grpcflow"
)

// connsShape is what is measured: how many connections, how many
// server streams each holds open, and gRPC's read buffer over each
// server connection.
type connsShape struct {
	count, streams, readBuffer int
	heapProfile                string // where the server's heap profile is written, once the clients are ready ("": none)
}

// jacodConns is the shape of a manager's connections to its nodes: a
// node's dispatcher session and its assignments streams, and the read
// buffer jacod's TCP server sets (node.tcpReadBuffer).
var jacodConns = connsShape{count: 1000, streams: 2, readBuffer: 0}

// connsFloor is what the server grew by, per connection, and its heap in
// use before and after.
type connsFloor struct {
	connsShape
	heapKB, stackKB, rssKB      float64
	goroutines                  float64
	heapBeforeMiB, heapAfterMiB float64
}

func (f connsFloor) String() string {
	return fmt.Sprintf("conns: %d mTLS connections with %d server streams each, read buffer %d: server heap in use %.0f -> %.0f MiB; "+
		"a connection: %.1f kB heap in use, %.1f kB of stacks, %.1f kB RSS, %.1f goroutines",
		f.count, f.streams, f.readBuffer, f.heapBeforeMiB, f.heapAfterMiB, f.heapKB, f.stackKB, f.rssKB, f.goroutines)
}

func connsCmd() *cobra.Command {
	shape := jacodConns
	cmd := command("conns",
		"Measure what a bare gRPC server holds for each node's connection",
		`jaco-bench conns measures what a bare gRPC server holds for each node's
connection, as the floor under a manager's memory per node: a server with
nothing behind it but gRPC's health service, on the transport jacod's TCP
server uses (TLS 1.3 with client certificates, no read buffer over TLS's,
static flow-control windows on both ends), and --count client connections
from a child process, each holding --streams server streams open as a node's
session and assignments streams do.

It prints one line: the server's growth in heap in use, goroutines and RSS,
divided by the connections. scripts/bench-largestore.sh runs it
(docs/bench/largestore.md).`,
		func() error { return runConns(shape) })
	f := cmd.Flags()
	f.IntVar(&shape.count, "count", shape.count, "client connections")
	f.IntVar(&shape.streams, "streams", shape.streams, "server streams each connection holds open")
	f.IntVar(&shape.readBuffer, "read-buffer", shape.readBuffer, "gRPC's read buffer over each server connection, bytes (0: none)")
	f.StringVar(&shape.heapProfile, "heap-profile", "", "write the server's heap profile here with every connection open (where a connection's heap goes)")
	f.SortFlags = false
	return cmd
}

func runConns(shape connsShape) error {
	if err := raiseFileLimit(slog.New(slog.NewTextHandler(os.Stderr, nil))); err != nil {
		return fmt.Errorf("conns: %w", err)
	}
	dir, err := os.MkdirTemp("", "jaco-bench-conns-")
	if err != nil {
		return fmt.Errorf("conns: scratch directory: %w", err)
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("conns: find this binary for the client process: %w", err)
	}
	f, err := measureConns(context.Background(), []string{self, "conns-client"}, dir, shape)
	if err != nil {
		return fmt.Errorf("conns: %w", err)
	}
	fmt.Println(f)
	return nil
}

// measureConns serves on loopback, has a child process (client: the
// command that runs runConnsClient) open the connections of shape, and
// reports the server's growth per connection.
func measureConns(ctx context.Context, client []string, dir string, shape connsShape) (connsFloor, error) {
	serverTLS, err := connsIdentities(dir)
	if err != nil {
		return connsFloor{}, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return connsFloor{}, err
	}
	srv := grpc.NewServer(append(grpcflow.ServerOptions(), grpc.Creds(credentials.NewTLS(serverTLS)), grpc.ReadBufferSize(shape.readBuffer))...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	before := serverUse()
	args := append(client[1:len(client):len(client)], "--addr", lis.Addr().String(), "--count", strconv.Itoa(shape.count),
		"--streams", strconv.Itoa(shape.streams), "--dir", dir)
	child := exec.CommandContext(ctx, client[0], args...)
	child.Stderr = os.Stderr
	stdin, err := child.StdinPipe()
	if err != nil {
		return connsFloor{}, err
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		return connsFloor{}, err
	}
	if err := child.Start(); err != nil {
		return connsFloor{}, fmt.Errorf("start the clients: %w", err)
	}
	defer func() {
		stdin.Close() // the child exits when its stdin closes
		_ = child.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		return connsFloor{}, fmt.Errorf("the clients did not get ready: %q, %v", line, err)
	}
	after := serverUse()
	if shape.heapProfile != "" {
		if err := writeHeapProfile(shape.heapProfile); err != nil {
			return connsFloor{}, err
		}
	}
	n := float64(shape.count)
	return connsFloor{
		connsShape:    shape,
		heapKB:        (after.heap - before.heap) / 1024 / n,
		stackKB:       (after.stack - before.stack) / 1024 / n,
		rssKB:         (after.rss - before.rss) / 1024 / n,
		goroutines:    (after.goroutines - before.goroutines) / n,
		heapBeforeMiB: before.heap / (1 << 20),
		heapAfterMiB:  after.heap / (1 << 20),
	}, nil
}

// use is what this process holds: its heap in use after a collection
// (HeapInuse, as scripts/bench-largestore.sh reads jacod's), its
// goroutines and their stacks (in RSS, not in the heap) and its RSS.
type use struct{ heap, stack, rss, goroutines float64 }

func serverUse() use {
	debug.FreeOSMemory() // collects first
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return use{heap: float64(ms.HeapInuse), stack: float64(ms.StackInuse), rss: float64(rssBytes()), goroutines: float64(runtime.NumGoroutine())}
}

// writeHeapProfile writes this process's heap profile (as of its last
// collection) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	return f.Close()
}

// rssBytes is this process's resident set size, from /proc.
func rssBytes() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for l := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// connsIdentities makes a CA, the server's certificate and the clients'
// one (all clients present the same; the TLS state is the same size) in
// dir, and returns the server's TLS config.
func connsIdentities(dir string) (*tls.Config, error) {
	caPEM, caKey, err := ca.NewRootCA("conns")
	if err != nil {
		return nil, err
	}
	signer, err := ca.NewSigner(caPEM, caKey)
	if err != nil {
		return nil, err
	}
	srvCert, srvKey, err := signer.Issue("server", ca.RoleManager, "conns", time.Hour)
	if err != nil {
		return nil, err
	}
	cliCert, cliKey, err := signer.Issue("client", ca.RoleWorker, "conns", time.Hour)
	if err != nil {
		return nil, err
	}
	if err := ca.SaveNodeFiles(dir, caPEM, cliCert, cliKey); err != nil {
		return nil, err
	}
	return ca.ServerTLSConfig(caPEM, srvCert, srvKey)
}

// connsClientCmd is the child process of measureConns, not a benchmark.
func connsClientCmd() *cobra.Command {
	var c connsClient
	cmd := command("conns-client",
		"The client process of conns (started by jaco-bench conns)",
		`jaco-bench conns-client is the child process jaco-bench conns starts: it opens
--count connections to --addr, each with --streams health watches, says
"ready" on stdout and holds them until its stdin closes.`,
		func() error { return runConnsClient(c) })
	cmd.Hidden = true
	f := cmd.Flags()
	f.StringVar(&c.addr, "addr", "", "the server")
	f.IntVar(&c.count, "count", 0, "connections")
	f.IntVar(&c.streams, "streams", 0, "health watches each connection holds open")
	f.StringVar(&c.dir, "dir", "", "where the client's certificate is")
	f.SortFlags = false
	return cmd
}

// connsClient is what conns-client is told to open.
type connsClient struct {
	addr           string
	count, streams int
	dir            string
}

// runConnsClient opens count connections, each with as many health
// watches as streams, says "ready" and holds them until its stdin closes.
func runConnsClient(c connsClient) error {
	if err := raiseFileLimit(slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		return err
	}
	caPEM, certPEM, keyPEM, err := ca.LoadNodeFiles(filepath.Clean(c.dir))
	if err != nil {
		return err
	}
	clientTLS, err := ca.ClientTLSConfig(caPEM, certPEM, keyPEM)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range c.count {
		conn, err := grpc.NewClient(c.addr, grpcflow.NodeDial(credentials.NewTLS(clientTLS))...)
		if err != nil {
			return err
		}
		defer conn.Close()
		for range c.streams {
			w, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
			if err != nil {
				return fmt.Errorf("connection %d: %w", i, err)
			}
			if _, err := w.Recv(); err != nil {
				return fmt.Errorf("connection %d: %w", i, err)
			}
		}
	}
	fmt.Println("ready")
	_, err = io.Copy(io.Discard, os.Stdin) // until the parent closes it
	return err
}
