package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/agent"
	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/backoff"
	"github.com/jaco-project/jaco/internal/grpcflow"
)

// simNode is one simulated worker: the agent's dispatcher session
// (agent/session.go) without a runtime behind it.
type simNode struct {
	sim   *simulator
	name  string
	id    string
	ident *simIdentity
	// conn is the node's connection to the manager, for its sessions and
	// its role checks (jacod shares it too).
	conn *grpc.ClientConn
	// replicas is what the node runs, by task id (run's goroutines only).
	replicas *simReplicas
}

func newSimNode(s *simulator, name string, id *simIdentity) (*simNode, error) {
	n := &simNode{sim: s, name: name, id: id.nodeID, ident: id, replicas: newSimReplicas()}
	var err error
	if n.conn, err = n.dial(); err != nil {
		return nil, err
	}
	return n, nil
}

// dial opens a lazy mutual-TLS connection to the manager, with the
// flow-control windows and reconnection pace of jacod's connections to
// other nodes (node.dialPeer).
func (n *simNode) dial() (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient(n.sim.o.manager, grpcflow.NodeDial(credentials.NewTLS(n.ident.tls.Clone()))...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", n.sim.o.manager, err)
	}
	return conn, nil
}

// run keeps a session open until ctx ends, and checks the node's role
// meanwhile; it closes the connection when it returns.
func (n *simNode) run(ctx context.Context) {
	defer n.conn.Close()
	done := make(chan struct{})
	defer func() { <-done }()
	go func() {
		defer close(done)
		n.roleLoop(ctx)
	}()
	failures := 0
	for ctx.Err() == nil {
		established, err := n.session(ctx)
		if ctx.Err() != nil {
			return
		}
		if established {
			failures = 0
		}
		n.sim.sessionFailures.Add(1)
		n.sim.log.Debug("dispatcher session ended", "node", n.name, "err", err)
		if !n.pause(ctx, failures) {
			return
		}
		failures++
	}
}

// pause is the agent's backoff between sessions: exponential from
// reconnectMin to reconnectMax, with up to 50 % jitter.
func (n *simNode) pause(ctx context.Context, failures int) bool {
	return backoff.Sleep(ctx, backoff.Delay(n.sim.o.reconnectMin, n.sim.o.reconnectMax, failures))
}

// roleLoop asks the manager for the node's role every roleCheck, as
// jacod's certificate loop does (an empty RenewCertificate).
func (n *simNode) roleLoop(ctx context.Context) {
	if n.sim.o.roleCheck <= 0 {
		return
	}
	c := api.NewMembershipServiceClient(n.conn)
	// Spread the nodes over the interval.
	wait := rand.N(n.sim.o.roleCheck)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = n.sim.o.roleCheck
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := c.RenewCertificate(cctx, &api.RenewCertificateRequest{
			TrustFingerprint: n.ident.trust, CertCaFingerprint: n.ident.issuer})
		cancel()
		if err != nil && ctx.Err() == nil {
			n.sim.log.Debug("role check failed", "node", n.name, "err", err)
		}
	}
}

// description is what the node says of itself: a large machine with both
// runtimes, so that the scheduler may place its share of replicas.
func (n *simNode) description() *api.NodeDescription {
	return &api.NodeDescription{
		Hostname:  n.name,
		Resources: &api.Resources{NanoCpus: n.sim.o.cpus, MemoryBytes: n.sim.o.memory},
		Runtimes:  []string{exec.RuntimeHooks, exec.RuntimeContainerd},
	}
}

// session is one dispatcher session, as the agent's: the session stream,
// heartbeats at the period it names, the assignments stream, and status
// reports. The first part to fail ends the others.
func (n *simNode) session(ctx context.Context) (established bool, err error) {
	client := api.NewDispatcherServiceClient(n.conn)
	g, ctx := errgroup.WithContext(ctx)
	stream, err := client.Session(ctx, &api.SessionRequest{Description: n.description()})
	if err != nil {
		return false, fmt.Errorf("open session: %w", err)
	}
	first, err := stream.Recv()
	if err != nil {
		return false, fmt.Errorf("open session: %w", err)
	}
	id := first.GetSessionId()
	if n.sim.sessions.Add(1) == int64(n.sim.o.count) {
		// The bench script times the return of every node after a
		// manager's restart by this line.
		n.sim.log.Info("every node in session", "nodes", n.sim.o.count)
	}
	defer n.sim.sessions.Add(-1)
	var period atomic.Int64
	period.Store(int64(periodOf(first.GetHeartbeatPeriod())))

	g.Go(func() error {
		for {
			m, err := stream.Recv()
			if err != nil {
				return endOf("session", err)
			}
			if p := m.GetHeartbeatPeriod().AsDuration(); p > 0 {
				period.Store(int64(p))
			}
		}
	})
	g.Go(func() error {
		as, err := client.Assignments(ctx, &api.AssignmentsRequest{SessionId: id})
		if err != nil {
			return fmt.Errorf("open assignments: %w", err)
		}
		var parts agent.CompleteParts
		for {
			m, err := as.Recv()
			if err != nil {
				return endOf("assignments", err)
			}
			if m = parts.Add(m); m != nil {
				n.sim.running.Add(n.replicas.apply(m))
			}
		}
	})
	// Heartbeats and status reports share one goroutine: what the
	// manager sees is the same, and 5 000 nodes cost fewer goroutines.
	g.Go(func() error {
		send := func(updates []*api.TaskStatusUpdate) error {
			_, err := client.UpdateTaskStatus(ctx, &api.UpdateTaskStatusRequest{SessionId: id, Updates: updates})
			if err != nil {
				return fmt.Errorf("update task status: %w", err)
			}
			n.sim.reports.Add(int64(len(updates)))
			return nil
		}
		beat := time.NewTimer(time.Duration(period.Load()))
		defer beat.Stop()
		var paced <-chan time.Time
		for {
			wake := n.replicas.wake
			if paced != nil {
				wake = nil // wait out the interval first
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-paced:
				paced = nil
				continue
			case <-wake:
			case <-beat.C:
				p := time.Duration(period.Load())
				hctx, cancel := context.WithTimeout(ctx, p)
				resp, err := client.Heartbeat(hctx, &api.HeartbeatRequest{SessionId: id})
				cancel()
				if err != nil {
					return fmt.Errorf("heartbeat: %w", err)
				}
				if rp := resp.GetPeriod().AsDuration(); rp > 0 {
					period.Store(int64(rp))
					p = rp
				}
				beat.Reset(p)
				continue
			}
			updates := n.replicas.batch()
			if len(updates) == 0 {
				continue
			}
			if err := send(updates); err != nil {
				n.replicas.poke() // the next session sends them at once
				return err
			}
			n.replicas.accepted(updates)
			paced = time.After(n.sim.o.statusInterval)
		}
	})
	return true, g.Wait()
}

func periodOf(d *durationpb.Duration) time.Duration {
	if p := d.AsDuration(); p > 0 {
		return p
	}
	return 5 * time.Second
}

// endOf names why a stream from the dispatcher ended.
func endOf(name string, err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%s stream: closed by the dispatcher", name)
	}
	return fmt.Errorf("%s stream: %w", name, err)
}
