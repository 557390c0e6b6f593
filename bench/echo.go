package main

// The echo system is the floor under the rate benchmark's writes
// (docs/bench/cluster.md): one process that answers jaco's
// write call at once, on the transport a jacod's unix socket serves it
// (grpcflow's windows, the same stream workers), with no raft, no disk
// and no store behind it. Driven by the same load generator at the same
// rate, its CPU and the load generator's are what any server of that
// call pays before it replicates anything; whatever a replicated write
// costs comes on top.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/ca/token"
	"github.com/jaco-project/jaco/client"
	"github.com/jaco-project/jaco/internal/grpcflow"
	"github.com/jaco-project/jaco/internal/testcluster"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// echoCluster is one echo server, standing where a cluster's leader
// would: it leads, in term 0, forever.
type echoCluster struct {
	socket string
	p      *testcluster.Process
}

var _ cluster = (*echoCluster)(nil)

// newEchoCluster starts an echo server on a socket under root and waits
// until it answers; server is the command that runs runEchoServer (this
// binary's `echo-server`).
func newEchoCluster(ctx context.Context, root string, server []string) (*echoCluster, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	c := &echoCluster{socket: filepath.Join(root, "echo.sock")}
	args := append(server[1:len(server):len(server)], "--socket", c.socket)
	c.p = newProc("echo", server[0], filepath.Join(root, "echo.log"), args...)
	if err := startProc(c.p); err != nil {
		return nil, err
	}
	if err := waitfor.Until(ctx, 10*time.Second, 50*time.Millisecond, c.healthy); err != nil {
		c.close()
		return nil, fmt.Errorf("echo server: %w", err)
	}
	return c, nil
}

func (c *echoCluster) system() string                      { return "echo" }
func (c *echoCluster) size() int                           { return 1 }
func (c *echoCluster) memberName(int) string               { return "echo" }
func (c *echoCluster) pids() []int                         { return []int{c.p.Pid()} }
func (c *echoCluster) proc(int) *testcluster.Process       { return c.p }
func (c *echoCluster) leader(context.Context) (int, error) { return 0, nil }
func (c *echoCluster) term(context.Context) (uint64, error) {
	return 0, nil
}
func (c *echoCluster) kill(int)          { _ = c.p.Kill() }
func (c *echoCluster) restart(int) error { return startProc(c.p) }
func (c *echoCluster) close()            { _ = c.p.Kill() }

func (c *echoCluster) client() (*client.Client, error) {
	return client.New(client.WithSocket(c.socket), client.WithoutRetry())
}

// healthy is one status call on a fresh connection.
func (c *echoCluster) healthy(ctx context.Context) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	_, err = cl.Cluster.Status(ctx, &api.ClusterStatusRequest{})
	return err
}

// writers are n connections, each making jaco's write call.
func (c *echoCluster) writers(ctx context.Context, _, n int) ([]writeFunc, func(), error) {
	return tokenWriters(ctx, n, "the echo server", c.client)
}

func (c *echoCluster) failoverWriter(context.Context, int) (writeFunc, func(), error) {
	return nil, nil, errors.New("the echo system has no failover: it is one process")
}

// echoServer answers jaco's write call with a token it made once, and
// the status call the writers connect with.
type echoServer struct {
	api.UnimplementedControlServiceServer
	api.UnimplementedClusterServiceServer
	token string
}

func (s *echoServer) IssueJoinToken(_ context.Context, req *api.IssueJoinTokenRequest) (*api.IssueJoinTokenResponse, error) {
	return &api.IssueJoinTokenResponse{
		Token:     s.token,
		ExpiresAt: timestamppb.New(time.Now().Add(req.GetTtl().AsDuration())),
	}, nil
}

func (s *echoServer) Status(context.Context, *api.ClusterStatusRequest) (*api.ClusterStatusResponse, error) {
	return &api.ClusterStatusResponse{}, nil
}

// echoServerCmd is the echo system's server process, not a benchmark.
func echoServerCmd() *cobra.Command {
	var socket string
	cmd := command("echo-server",
		"The echo system's server (started by the cluster benchmark)",
		`jaco-bench echo-server is the process of the cluster benchmark's echo system
(--systems echo): it answers jaco's write call at once on the unix socket
--socket, with nothing behind it, and serves until killed.`,
		func() error { return runEchoServer(socket) })
	cmd.Hidden = true
	cmd.Flags().StringVar(&socket, "socket", "", "the unix socket to serve on")
	cmd.Flags().SortFlags = false
	return cmd
}

// runEchoServer serves the echo system on socket until killed.
func runEchoServer(socket string) error {
	if socket == "" {
		return errors.New("echo-server: --socket is required")
	}
	// A token of the size jaco's are, made as they are (the fingerprint's
	// form is all that matters here).
	tok, err := token.New(fmt.Sprintf("%064x", 0))
	if err != nil {
		return fmt.Errorf("echo-server: %w", err)
	}
	lis, err := net.Listen("unix", socket)
	if err != nil {
		return fmt.Errorf("echo-server: %w", err)
	}
	srv := grpc.NewServer(append(grpcflow.ServerOptions(),
		grpc.Creds(insecure.NewCredentials()),
		grpcflow.StreamWorkers(),
	)...)
	s := &echoServer{token: tok.String()}
	api.RegisterControlServiceServer(srv, s)
	api.RegisterClusterServiceServer(srv, s)
	return srv.Serve(lis)
}
