package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/jaco-project/jaco/internal/testcluster"
	"github.com/jaco-project/jaco/internal/waitfor"
)

type etcdMember struct {
	name, dir       string
	clientURL, peer string
	p               *testcluster.Process
	memberID        uint64
}

// etcdCluster is a static three-member etcd on loopback, with etcd's
// defaults for everything the benchmark does not have to set (snapshot
// count, fsync, heartbeat 100 ms, election timeout 1 s).
type etcdCluster struct {
	members []*etcdMember
}

var _ cluster = (*etcdCluster)(nil)

// etcdValue pads a Put to about the size of a jaco JoinToken (see
// payloadBytes): a 28-byte key and this value.
var etcdValue = strings.Repeat("v", etcdPayload-28)

// etcdPayload is the key plus value size of one benchmark Put.
const etcdPayload = 100

// etcdKeys numbers the keys written, so that every Put adds a key, as
// every IssueJoinToken adds an object.
var etcdKeys atomic.Uint64

func etcdKey() string { return fmt.Sprintf("/jaco-bench/%016x", etcdKeys.Add(1)) }

func newEtcdCluster(ctx context.Context, bin, root string, n int) (*etcdCluster, error) {
	c := &etcdCluster{}
	var initial []string
	for i := 1; i <= n; i++ {
		cp, err := freePort()
		if err != nil {
			return nil, err
		}
		pp, err := freePort()
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("e%d", i)
		m := &etcdMember{
			name:      name,
			dir:       filepath.Join(root, name),
			clientURL: fmt.Sprintf("http://127.0.0.1:%d", cp),
			peer:      fmt.Sprintf("http://127.0.0.1:%d", pp),
		}
		if err := os.MkdirAll(root, 0o700); err != nil {
			return nil, err
		}
		initial = append(initial, name+"="+m.peer)
		c.members = append(c.members, m)
	}
	for _, m := range c.members {
		m.p = newProc(m.name, bin, filepath.Join(root, m.name+".log"),
			"--name", m.name,
			"--data-dir", m.dir,
			"--listen-client-urls", m.clientURL,
			"--advertise-client-urls", m.clientURL,
			"--listen-peer-urls", m.peer,
			"--initial-advertise-peer-urls", m.peer,
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-token", "jaco-bench-"+filepath.Base(root),
			"--initial-cluster-state", "new",
			"--logger", "zap",
		)
		if err := startProc(m.p); err != nil {
			c.close()
			return nil, err
		}
	}
	err := waitfor.Until(ctx, 60*time.Second, 100*time.Millisecond, func(ctx context.Context) error {
		_, err := c.leader(ctx)
		return err
	})
	if err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

func newEtcdClient(endpoints ...string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
}

// status asks member m for its status on a fresh connection.
func (c *etcdCluster) status(ctx context.Context, m *etcdMember) (*clientv3.StatusResponse, error) {
	cl, err := newEtcdClient(m.clientURL)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return cl.Status(ctx, m.clientURL)
}

// liveStatuses calls fn with the status of each running member, in order,
// stopping at the first error (a failed status read, or fn's).
func (c *etcdCluster) liveStatuses(ctx context.Context, fn func(m *etcdMember, s *clientv3.StatusResponse) error) error {
	for _, m := range c.members {
		if !m.p.Running() {
			continue
		}
		s, err := c.status(ctx, m)
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		if err := fn(m, s); err != nil {
			return err
		}
	}
	return nil
}

func (c *etcdCluster) term(ctx context.Context) (uint64, error) {
	var term uint64
	err := c.liveStatuses(ctx, func(_ *etcdMember, s *clientv3.StatusResponse) error {
		term = max(term, s.RaftTerm)
		return nil
	})
	return term, err
}

func (c *etcdCluster) system() string          { return "etcd" }
func (c *etcdCluster) size() int               { return len(c.members) }
func (c *etcdCluster) memberName(i int) string { return c.members[i].name }

func (c *etcdCluster) proc(i int) *testcluster.Process { return c.members[i].p }

func (c *etcdCluster) pids() []int {
	out := make([]int, len(c.members))
	for i, m := range c.members {
		out[i] = m.p.Pid()
	}
	return out
}

func (c *etcdCluster) leader(ctx context.Context) (int, error) {
	var lead uint64
	err := c.liveStatuses(ctx, func(m *etcdMember, s *clientv3.StatusResponse) error {
		m.memberID = s.Header.MemberId
		if s.Leader == 0 {
			return fmt.Errorf("%s sees no leader", m.name)
		}
		if lead != 0 && s.Leader != lead {
			return fmt.Errorf("members disagree on the leader (%x, %x)", lead, s.Leader)
		}
		lead = s.Leader
		return nil
	})
	if err != nil {
		return -1, err
	}
	for i, m := range c.members {
		if m.memberID == lead {
			return i, nil
		}
	}
	return -1, fmt.Errorf("leader %x is none of the members", lead)
}

func (c *etcdCluster) writers(ctx context.Context, i, n int) ([]writeFunc, func(), error) {
	var clients []*clientv3.Client
	closeAll := func() {
		for _, cl := range clients {
			cl.Close()
		}
	}
	var ws []writeFunc
	for range n {
		cl, err := newEtcdClient(c.members[i].clientURL)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		clients = append(clients, cl)
		if _, err := cl.Status(ctx, c.members[i].clientURL); err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("connect to %s: %w", c.members[i].name, err)
		}
		ws = append(ws, func(ctx context.Context) error {
			_, err := cl.Put(ctx, etcdKey(), etcdValue)
			return err
		})
	}
	return ws, closeAll, nil
}

// failoverWriter is one etcd client given every endpoint (skip is ignored:
// the client balances over all of them and drops a dead one itself).
func (c *etcdCluster) failoverWriter(ctx context.Context, _ int) (writeFunc, func(), error) {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.clientURL)
	}
	cl, err := newEtcdClient(eps...)
	if err != nil {
		return nil, nil, err
	}
	// Connect to every endpoint now, outside the measured part.
	for _, ep := range eps {
		if _, err := cl.Status(ctx, ep); err != nil {
			cl.Close()
			return nil, nil, fmt.Errorf("connect to %s: %w", ep, err)
		}
	}
	return func(ctx context.Context) error {
		_, err := cl.Put(ctx, etcdKey(), etcdValue)
		return err
	}, func() { cl.Close() }, nil
}

func (c *etcdCluster) kill(i int) { _ = c.members[i].p.Kill() }

func (c *etcdCluster) restart(i int) error { return startProc(c.members[i].p) }

// healthy also wants every member's applied raft index within 1000 of the
// leader's: the restarted member has caught up.
func (c *etcdCluster) healthy(ctx context.Context) error {
	for _, m := range c.members {
		if !m.p.Running() {
			return fmt.Errorf("%s is not running; see %s", m.name, m.p.LogPath())
		}
	}
	li, err := c.leader(ctx)
	if err != nil {
		return err
	}
	ls, err := c.status(ctx, c.members[li])
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range c.members {
		s, err := c.status(ctx, m)
		if err != nil {
			return err
		}
		if s.IsLearner {
			errs = append(errs, fmt.Errorf("%s is a learner", m.name))
		}
		if s.RaftIndex+1000 < ls.RaftIndex {
			errs = append(errs, fmt.Errorf("%s is at raft index %d, the leader at %d", m.name, s.RaftIndex, ls.RaftIndex))
		}
		cl, err := newEtcdClient(m.clientURL)
		if err != nil {
			return err
		}
		if _, err := cl.Put(ctx, etcdKey(), etcdValue); err != nil {
			errs = append(errs, fmt.Errorf("write through %s: %w", m.name, err))
		}
		cl.Close()
	}
	return errors.Join(errs...)
}

func (c *etcdCluster) close() {
	for _, m := range c.members {
		stopProc(m.p)
	}
}
