package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/jaco-project/jaco/agent"
	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/grpcflow"
)

// simNode is one simulated worker: the agent's dispatcher sessions
// (agent.Sessions) without a runtime behind them.
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
// other nodes (node.dialPeer), and the simulator's count of the statuses
// reported through it.
func (n *simNode) dial() (*grpc.ClientConn, error) {
	opts := append(grpcflow.NodeDial(credentials.NewTLS(n.ident.tls.Clone())), grpc.WithChainUnaryInterceptor(n.sim.countReports))
	conn, err := grpc.NewClient(n.sim.o.manager, opts...)
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
	n.sessions().Run(ctx)
}

// sessions are the agent's sessions with the dispatcher, over the node's
// one connection, with the agent's pacing; what they open, end and apply
// is counted for the simulator's report.
func (n *simNode) sessions() *agent.Sessions {
	return &agent.Sessions{
		Connect: func(context.Context) (*grpc.ClientConn, func(), error) {
			return n.conn, func() {}, nil
		},
		Description: n.description,
		Assign:      func(m *api.AssignmentsMessage) { n.sim.running.Add(n.replicas.apply(m)) },
		Statuses:    n.replicas.statuses,
		Opened: func(string, api.DispatcherServiceClient) func() {
			if n.sim.sessions.Add(1) == int64(n.sim.o.count) {
				// The bench script times the return of every node after a
				// manager's restart by this line.
				n.sim.log.Info("every node in session", "nodes", n.sim.o.count)
			}
			return func() { n.sim.sessions.Add(-1) }
		},
		Ended: func(_ bool, err error) {
			n.sim.sessionFailures.Add(1)
			n.sim.log.Debug("dispatcher session ended", "node", n.name, "err", err)
		},
		ReconnectMin:   agent.DefaultReconnectMin,
		ReconnectMax:   agent.DefaultReconnectMax,
		StatusInterval: agent.DefaultStatusInterval,
	}
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

// countReports counts the statuses of each status report the dispatcher
// accepted: the agent's session code, which sends them, counts nothing.
func (s *simulator) countReports(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	if r, ok := req.(*api.UpdateTaskStatusRequest); ok && err == nil {
		s.reports.Add(int64(len(r.GetUpdates())))
	}
	return err
}
