package chaos

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/testcluster"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// Bounds of forming the cluster and of waiting for it to elect.
const (
	formTimeout     = 90 * time.Second
	electionTimeout = 30 * time.Second
	cliTimeout      = 60 * time.Second
)

// cluster is the run's managers, formed through join tokens.
type cluster struct {
	// hub is the run's network: one host per member (internal/testcluster).
	hub     *testcluster.Hub
	members []*member
	jaco    string
	// status asks each member about the cluster, over its socket.
	status []api.ClusterServiceClient
	conns  []*grpc.ClientConn
	// acked counts the writes the workloads saw acknowledged, for a
	// nemesis that holds its fault until the cluster moved on.
	acked atomic.Int64
}

// formCluster starts n managers, each on a host of its own: the first
// inits the cluster and the others join through it. It returns once every
// member names the same leader and all n are voters.
func formCluster(ctx context.Context, bins Binaries, dir string, n int, setup setup) (_ *cluster, err error) {
	hub, err := testcluster.NewHub(ctx)
	if err != nil {
		return nil, err
	}
	c := &cluster{hub: hub, jaco: bins.Jaco}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.close(context.WithoutCancel(ctx)))
		}
	}()
	for i := range n {
		hs, err := hub.AddHost(ctx)
		if err != nil {
			return nil, err
		}
		c.members = append(c.members, newMember(fmt.Sprintf("m%d", i+1), hs, bins.Jacod, dir, setup.flags))
	}
	if setup.smallDisks {
		for _, m := range c.members {
			if err := m.mountDisk(ctx); err != nil {
				return nil, err
			}
		}
	}
	for _, m := range c.members {
		if err := m.start(ctx); err != nil {
			return nil, err
		}
		conn, err := dialSocket(m)
		if err != nil {
			return nil, err
		}
		c.conns = append(c.conns, conn)
		c.status = append(c.status, api.NewClusterServiceClient(conn))
	}
	first := c.members[0]
	if _, err := c.cli(ctx, first, "cluster", "init", "--quiet"); err != nil {
		return nil, err
	}
	for _, m := range c.members[1:] {
		tok, err := c.cli(ctx, first, "node", "issue-join-token", "--role", "manager")
		if err != nil {
			return nil, err
		}
		if _, err := c.cli(ctx, m, "node", "join", "--peer", first.addr(), "--token", strings.TrimSpace(tok)); err != nil {
			return nil, err
		}
	}
	if err := waitfor.Until(ctx, formTimeout, waitPoll, func(context.Context) error { return c.converged(ctx, n) }); err != nil {
		return nil, fmt.Errorf("cluster did not form: %w", err)
	}
	return c, nil
}

// dialSocket connects to m's unix socket (the trusted local channel: no
// token). gRPC reconnects by itself after a restart.
func dialSocket(m *member) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient("unix://"+m.socket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dial %s's socket: %w", m.name, err)
	}
	return conn, nil
}

// cli runs the jaco CLI against m's socket and returns its stdout.
func (c *cluster) cli(ctx context.Context, m *member, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.jaco, append([]string{"--data-dir", m.dir}, args...)...)
	cmd.Env = testcluster.Environ()
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("jaco %s on %s: %w: %s", strings.Join(args, " "), m.name, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// converged succeeds once every member names the same leader and counts
// want voters.
func (c *cluster) converged(ctx context.Context, want int) error {
	leader := ""
	for i, m := range c.members {
		s, err := c.askStatus(ctx, i)
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		if s.LeaderNodeId == "" || (leader != "" && s.LeaderNodeId != leader) {
			return fmt.Errorf("%s sees leader %q, others %q", m.name, s.LeaderNodeId, leader)
		}
		leader = s.LeaderNodeId
		voters := 0
		for _, mb := range s.Members {
			if mb.Suffrage == api.Suffrage_SUFFRAGE_VOTER {
				voters++
			}
		}
		if voters != want {
			return fmt.Errorf("%s counts %d voters, want %d", m.name, voters, want)
		}
	}
	return nil
}

func (c *cluster) askStatus(ctx context.Context, i int) (*api.ClusterStatusResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return c.status[i].Status(ctx, &api.ClusterStatusRequest{})
}

// leader waits until every member names the same leader, and returns its
// index. Nemeses call it on a healthy cluster, before their fault.
func (c *cluster) leader(ctx context.Context) (int, error) {
	idx := -1
	err := waitfor.Until(ctx, electionTimeout, waitPoll, func(context.Context) error {
		leader, hostname := "", ""
		for i, m := range c.members {
			s, err := c.askStatus(ctx, i)
			if err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			if s.LeaderNodeId == "" || (leader != "" && s.LeaderNodeId != leader) {
				return fmt.Errorf("%s sees leader %q, others %q", m.name, s.LeaderNodeId, leader)
			}
			leader = s.LeaderNodeId
			for _, mb := range s.Members {
				if mb.NodeId == leader {
					hostname = mb.Hostname
				}
			}
		}
		for i, m := range c.members {
			if m.name == hostname {
				idx = i
				return nil
			}
		}
		return fmt.Errorf("no member is named %q, the leader's hostname", hostname)
	})
	return idx, err
}

// waitHealthy waits until every member runs, names the same leader and a
// linearizable read succeeds through each: the state a nemesis starts from
// and a healed cluster returns to.
func (c *cluster) waitHealthy(ctx context.Context, timeout time.Duration) error {
	return waitfor.Until(ctx, timeout, waitPoll, func(context.Context) error {
		if err := c.converged(ctx, len(c.members)); err != nil {
			return err
		}
		for i, conn := range c.conns {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := api.NewControlServiceClient(conn).ListNodes(rctx, &api.ListNodesRequest{
				PageSize: 1, Consistency: api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE})
			cancel()
			if err != nil {
				return fmt.Errorf("linearizable read through %s: %w", c.members[i].name, err)
			}
		}
		return nil
	})
}

// crashes reports members that died without the runner ending them.
func (c *cluster) crashes() error {
	var errs []error
	for _, m := range c.members {
		errs = append(errs, m.crash())
	}
	return errors.Join(errs...)
}

// close stops every member and deletes the hub.
func (c *cluster) close(ctx context.Context) error {
	var errs []error
	for _, conn := range c.conns {
		_ = conn.Close()
	}
	for _, m := range c.members {
		if m.running() || m.crash() != nil {
			errs = append(errs, m.stop())
		}
		errs = append(errs, m.unmountDisk(ctx))
	}
	return errors.Join(append(errs, c.hub.Close(ctx))...)
}

// raceReport is what a daemon built with -race prints on a data race.
var raceReport = regexp.MustCompile(`WARNING: DATA RACE`)
