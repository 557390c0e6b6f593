package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/client"
	"github.com/jaco-project/jaco/internal/datadir"
	"github.com/jaco-project/jaco/internal/testcluster"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// jacoBins are the binaries the jaco clusters run.
type jacoBins struct {
	jacod, jaco string
	// tcp makes the rate writers dial the TCP port with the operator token
	// (TLS) instead of the member's unix socket.
	tcp bool
}

type jacoMember struct {
	name, dir, addr string
	// metricsAddr is where the member serves its metrics ("" when off).
	metricsAddr string
	p           *testcluster.Process
	nodeID      string
}

// jacoCluster is a group of jacod managers on loopback, formed as an
// operator would: init on the first, join tokens for the others.
type jacoCluster struct {
	bins    jacoBins
	members []*jacoMember
	token   string // operator token
	// scrape fetches the members' metrics while the cluster runs (the
	// jaco-metrics system; nil for jaco).
	scrape *scraper
}

var _ cluster = (*jacoCluster)(nil)

// startJacods starts n uninitialized daemons m1..mn under root, serving
// their metrics when withMetrics.
func startJacods(ctx context.Context, bins jacoBins, root string, n int, withMetrics bool) (*jacoCluster, error) {
	c := &jacoCluster{bins: bins}
	for i := 1; i <= n; i++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("m%d", i)
		m := &jacoMember{name: name, dir: filepath.Join(root, name), addr: "127.0.0.1:" + strconv.Itoa(port)}
		if err := os.MkdirAll(m.dir, 0o700); err != nil {
			return nil, err
		}
		args := []string{"--data-dir", m.dir, "--listen-addr", m.addr, "--node-name", name}
		if withMetrics {
			mport, err := freePort()
			if err != nil {
				return nil, err
			}
			m.metricsAddr = "127.0.0.1:" + strconv.Itoa(mport)
			args = append(args, "--metrics-addr", m.metricsAddr)
		}
		m.p = newProc(name, bins.jacod, filepath.Join(root, name+".log"), args...)
		c.members = append(c.members, m)
	}
	for _, m := range c.members {
		if err := startProc(m.p); err != nil {
			c.close()
			return nil, err
		}
	}
	for _, m := range c.members {
		if err := c.waitUp(ctx, m); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

// newJacoCluster forms an n-manager cluster: m1 initializes it, the others
// join through m1 with manager tokens, and it returns once all are voters.
// withMetrics: the members serve metrics, scraped from then on until close.
func newJacoCluster(ctx context.Context, bins jacoBins, root string, n int, withMetrics bool) (*jacoCluster, error) {
	c, err := startJacods(ctx, bins, root, n, withMetrics)
	if err != nil {
		return nil, err
	}
	if err := c.form(ctx); err != nil {
		c.close()
		return nil, err
	}
	if withMetrics {
		var addrs []string
		for _, m := range c.members {
			addrs = append(addrs, m.metricsAddr)
		}
		c.scrape = startScraper(addrs)
	}
	return c, nil
}

func (c *jacoCluster) form(ctx context.Context) error {
	if err := c.init(ctx); err != nil {
		return err
	}
	for _, m := range c.members[1:] {
		tok, err := c.joinToken(ctx, c.members[0], api.NodeRole_NODE_ROLE_MANAGER)
		if err != nil {
			return err
		}
		err = withJaco(ctx, m, 90*time.Second, func(ctx context.Context, cl *client.Client) error {
			_, err := cl.Cluster.Join(ctx, &api.JoinClusterRequest{Peer: c.members[0].addr, Token: tok})
			return err
		})
		if err != nil {
			return fmt.Errorf("%s joins: %w", m.name, err)
		}
		if err := c.learnNodeID(ctx, m); err != nil {
			return err
		}
	}
	return waitfor.Until(ctx, 60*time.Second, 100*time.Millisecond, c.allVoters)
}

// init makes m1 the first manager and keeps the operator token.
func (c *jacoCluster) init(ctx context.Context) error {
	m := c.members[0]
	err := withJaco(ctx, m, 30*time.Second, func(ctx context.Context, cl *client.Client) error {
		resp, err := cl.Cluster.Init(ctx, &api.InitClusterRequest{})
		if err != nil {
			return err
		}
		c.token = resp.OperatorToken
		return nil
	})
	if err != nil {
		return fmt.Errorf("init %s: %w", m.name, err)
	}
	return c.learnNodeID(ctx, m)
}

// joinToken mints a join token through m.
func (c *jacoCluster) joinToken(ctx context.Context, m *jacoMember, role api.NodeRole) (string, error) {
	var tok string
	err := withJaco(ctx, m, 30*time.Second, func(ctx context.Context, cl *client.Client) error {
		resp, err := cl.Control.IssueJoinToken(ctx, &api.IssueJoinTokenRequest{Role: role, Ttl: durationpb.New(time.Hour)})
		if err != nil {
			return err
		}
		tok = resp.Token
		return nil
	})
	return tok, err
}

func (c *jacoCluster) learnNodeID(ctx context.Context, m *jacoMember) error {
	return waitfor.Until(ctx, 30*time.Second, 50*time.Millisecond, func(ctx context.Context) error {
		s, err := jacoStatus(ctx, m)
		if err != nil {
			return err
		}
		if s.NodeId == "" {
			return fmt.Errorf("%s has no node id yet", m.name)
		}
		m.nodeID = s.NodeId
		return nil
	})
}

// waitUp waits until m's socket answers.
func (c *jacoCluster) waitUp(ctx context.Context, m *jacoMember) error {
	return waitfor.Until(ctx, 30*time.Second, 50*time.Millisecond, func(ctx context.Context) error {
		if !m.p.Running() {
			return fmt.Errorf("%s exited; see %s", m.name, m.p.LogPath())
		}
		_, err := jacoStatus(ctx, m)
		return err
	})
}

// socketClient is a client of m's unix socket with no retry of its own:
// the benchmarks count every attempt.
func socketClient(m *jacoMember) (*client.Client, error) {
	return client.New(client.WithSocket(datadir.Dir(m.dir).Socket()), client.WithoutRetry())
}

// withJaco calls fn with a fresh client of m's socket (a fresh connection
// never sits in gRPC's reconnect backoff after a restart), retrying fn
// until it succeeds or timeout passes.
func withJaco(ctx context.Context, m *jacoMember, timeout time.Duration, fn func(ctx context.Context, cl *client.Client) error) error {
	return waitfor.Until(ctx, timeout, 100*time.Millisecond, func(ctx context.Context) error {
		cl, err := socketClient(m)
		if err != nil {
			return err
		}
		defer cl.Close()
		return fn(ctx, cl)
	})
}

// jacoStatus asks m for its status once, on a fresh connection.
func jacoStatus(ctx context.Context, m *jacoMember) (*api.ClusterStatusResponse, error) {
	cl, err := socketClient(m)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return cl.Cluster.Status(ctx, &api.ClusterStatusRequest{})
}

func (c *jacoCluster) term(ctx context.Context) (uint64, error) {
	var term uint64
	for _, m := range c.members {
		if !m.p.Running() {
			continue
		}
		s, err := jacoStatus(ctx, m)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", m.name, err)
		}
		term = max(term, s.GetRaftTerm())
	}
	return term, nil
}

func (c *jacoCluster) system() string          { return "jaco" }
func (c *jacoCluster) size() int               { return len(c.members) }
func (c *jacoCluster) memberName(i int) string { return c.members[i].name }

func (c *jacoCluster) proc(i int) *testcluster.Process { return c.members[i].p }

func (c *jacoCluster) pids() []int {
	out := make([]int, len(c.members))
	for i, m := range c.members {
		out[i] = m.p.Pid()
	}
	return out
}

func (c *jacoCluster) leader(ctx context.Context) (int, error) {
	leaderID := ""
	for _, m := range c.members {
		if !m.p.Running() {
			continue
		}
		s, err := jacoStatus(ctx, m)
		if err != nil {
			return -1, fmt.Errorf("%s: %w", m.name, err)
		}
		if s.LeaderNodeId == "" {
			return -1, fmt.Errorf("%s sees no leader", m.name)
		}
		if leaderID != "" && s.LeaderNodeId != leaderID {
			return -1, fmt.Errorf("members disagree on the leader (%s, %s)", leaderID, s.LeaderNodeId)
		}
		leaderID = s.LeaderNodeId
	}
	for i, m := range c.members {
		if m.nodeID == leaderID {
			return i, nil
		}
	}
	return -1, fmt.Errorf("leader %q is none of the members", leaderID)
}

// allVoters checks that every member is up, agrees on a leader, and that
// the leader lists every member as a ready voter.
func (c *jacoCluster) allVoters(ctx context.Context) error {
	li, err := c.leader(ctx)
	if err != nil {
		return err
	}
	s, err := jacoStatus(ctx, c.members[li])
	if err != nil {
		return err
	}
	if len(s.Members) != len(c.members) {
		return fmt.Errorf("leader lists %d members, want %d", len(s.Members), len(c.members))
	}
	for _, m := range s.Members {
		if m.Suffrage != api.Suffrage_SUFFRAGE_VOTER || m.Status != api.MemberStatus_MEMBER_STATUS_READY {
			return fmt.Errorf("member %s is %s, %s", m.Hostname, m.Status, m.Suffrage)
		}
	}
	return nil
}

// issueToken is the rate benchmark's write: a worker join token, one
// stored object, as etcd's is one key.
func issueToken(ctx context.Context, cl *client.Client) error {
	_, err := cl.Control.IssueJoinToken(ctx, &api.IssueJoinTokenRequest{
		Role: api.NodeRole_NODE_ROLE_WORKER,
		Ttl:  durationpb.New(time.Hour),
	})
	return err
}

func (c *jacoCluster) writers(ctx context.Context, i, n int) ([]writeFunc, func(), error) {
	m := c.members[i]
	dial := func() (*client.Client, error) {
		if c.bins.tcp {
			return client.New(client.WithServer(m.addr, c.token), client.WithoutRetry())
		}
		return socketClient(m)
	}
	return tokenWriters(ctx, n, m.name, dial)
}

// tokenWriters are n connections from dial, each connected now (outside
// the measured part) and making the rate benchmark's write; name says
// whom an error is about.
func tokenWriters(ctx context.Context, n int, name string, dial func() (*client.Client, error)) ([]writeFunc, func(), error) {
	var clients []*client.Client
	closeAll := func() {
		for _, cl := range clients {
			cl.Close()
		}
	}
	var ws []writeFunc
	for range n {
		cl, err := dial()
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		clients = append(clients, cl)
		if _, err := cl.Cluster.Status(ctx, &api.ClusterStatusRequest{}); err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("connect to %s: %w", name, err)
		}
		ws = append(ws, func(ctx context.Context) error { return issueToken(ctx, cl) })
	}
	return ws, closeAll, nil
}

// failoverWriter round-robins over the members other than skip, one
// connection each (the jaco client takes a single address).
func (c *jacoCluster) failoverWriter(ctx context.Context, skip int) (writeFunc, func(), error) {
	var clients []*client.Client
	closeAll := func() {
		for _, cl := range clients {
			cl.Close()
		}
	}
	for i, m := range c.members {
		if i == skip {
			continue
		}
		cl, err := socketClient(m)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		clients = append(clients, cl)
		if _, err := cl.Cluster.Status(ctx, &api.ClusterStatusRequest{}); err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("connect to %s: %w", m.name, err)
		}
	}
	var next atomic.Uint64
	return func(ctx context.Context) error {
		cl := clients[next.Add(1)%uint64(len(clients))]
		return issueToken(ctx, cl)
	}, closeAll, nil
}

func (c *jacoCluster) kill(i int) { _ = c.members[i].p.Kill() }

func (c *jacoCluster) restart(i int) error { return startProc(c.members[i].p) }

func (c *jacoCluster) healthy(ctx context.Context) error {
	for _, m := range c.members {
		if !m.p.Running() {
			return fmt.Errorf("%s is not running; see %s", m.name, m.p.LogPath())
		}
	}
	if err := c.allVoters(ctx); err != nil {
		return err
	}
	var errs []error
	for _, m := range c.members {
		cl, err := socketClient(m)
		if err != nil {
			return err
		}
		if err := issueToken(ctx, cl); err != nil {
			errs = append(errs, fmt.Errorf("write through %s: %w", m.name, err))
		}
		cl.Close()
	}
	return errors.Join(errs...)
}

func (c *jacoCluster) close() {
	if c.scrape != nil {
		c.scrape.stop()
		c.scrape = nil
	}
	for _, m := range c.members {
		stopProc(m.p)
	}
}
