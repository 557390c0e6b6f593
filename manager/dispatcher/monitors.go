package dispatcher

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/placement"
)

// Monitors (docs/adr/0042). Every agent heartbeats to a few other nodes
// besides the dispatcher; when the dispatcher loses a node it asks them
// whether they still hear it. A node they hear is PARTITIONED (cut off
// from the managers, running), one they do not is DOWN.
//
// The replicas of one node share its monitors: whether a replica can be
// reached is whether its node's agent can, so per-replica monitors would
// ask the same question more often.

// monitorsPerNode is how many monitors each node heartbeats to: two, so
// that one monitor down or cut off too does not turn a partition into a
// death.
const monitorsPerNode = 2

// FailureDomainLabel is the node label naming a node's failure domain
// (a rack, a zone): monitors are picked in other domains first.
const FailureDomainLabel = "failure-domain"

// monitorCandidate is a node that may monitor others.
type monitorCandidate struct {
	peer    *api.MonitorPeer
	domain  string
	manager bool
}

// monitorRing holds the nodes that may monitor others (ready, with an
// address), workers first, each part in id order: a node's monitors
// start at a place its id hashes to, so they stay the same while the
// ring does, and spread evenly over the nodes. Guarded by Server.mu.
type monitorRing struct {
	byNode map[string]monitorCandidate
	ring   []monitorCandidate // rebuilt lazily (nil: stale)
	domain map[string]string  // every node's failure domain, ready or not
	names  map[string]string  // every node's hostname, for messages
	// sent holds the monitors each node's session was last sent: the
	// ones asked when it is lost.
	sent map[string][]*api.MonitorPeer
	// partitioned holds the nodes the store shows PARTITIONED, whose
	// monitors rejudge asks again.
	partitioned map[string]bool
}

func newMonitorRing() *monitorRing {
	return &monitorRing{byNode: map[string]monitorCandidate{}, domain: map[string]string{},
		names: map[string]string{}, sent: map[string][]*api.MonitorPeer{}, partitioned: map[string]bool{}}
}

// set records n; it reports whether the ring changed.
func (r *monitorRing) set(n *api.Node) bool {
	r.domain[n.GetId()] = n.GetLabels()[FailureDomainLabel]
	r.names[n.GetId()] = placement.Hostname(n)
	if n.GetStatus().GetState() == api.NodeStatusState_NODE_STATUS_STATE_PARTITIONED {
		r.partitioned[n.GetId()] = true
	} else {
		delete(r.partitioned, n.GetId())
	}
	c, was := r.byNode[n.GetId()]
	ok := n.GetStatus().GetState() == api.NodeStatusState_NODE_STATUS_STATE_READY && n.GetAddress() != ""
	now := monitorCandidate{peer: &api.MonitorPeer{NodeId: n.GetId(), Address: n.GetAddress()},
		domain: r.domain[n.GetId()], manager: n.GetRole() == api.NodeRole_NODE_ROLE_MANAGER}
	switch {
	case !ok && !was:
		return false
	case !ok:
		delete(r.byNode, n.GetId())
	case was && c.peer.GetAddress() == now.peer.GetAddress() && c.domain == now.domain && c.manager == now.manager:
		return false
	default:
		r.byNode[n.GetId()] = now
	}
	r.ring = nil
	return true
}

func (r *monitorRing) remove(id string) {
	delete(r.domain, id)
	delete(r.names, id)
	delete(r.sent, id)
	delete(r.partitioned, id)
	if _, ok := r.byNode[id]; ok {
		delete(r.byNode, id)
		r.ring = nil
	}
}

func (r *monitorRing) reset(nodes []*api.Node) {
	r.byNode, r.domain, r.names, r.ring = map[string]monitorCandidate{}, map[string]string{}, map[string]string{}, nil
	r.partitioned = map[string]bool{}
	for _, n := range nodes {
		r.set(n)
	}
}

// pick returns node's monitors: other ready nodes, workers before
// managers (a manager shares the managers' view of the network, which is
// what is in doubt), other failure domains before the node's own.
func (r *monitorRing) pick(node string) []*api.MonitorPeer {
	if r.ring == nil {
		r.ring = make([]monitorCandidate, 0, len(r.byNode))
		for _, c := range r.byNode {
			r.ring = append(r.ring, c)
		}
		slices.SortFunc(r.ring, func(a, b monitorCandidate) int {
			return cmp.Or(cmp.Compare(boolInt(a.manager), boolInt(b.manager)), strings.Compare(a.peer.GetNodeId(), b.peer.GetNodeId()))
		})
	}
	n := len(r.ring)
	if n == 0 {
		return nil
	}
	h := fnv.New32a()
	h.Write([]byte(node))
	start := int(h.Sum32() % uint32(n))
	mine := r.domain[node]
	var out []*api.MonitorPeer
	// rank 0: a worker in another domain; 1: a worker in the same; 2 and
	// 3: managers likewise.
	for rank := 0; rank < 4 && len(out) < monitorsPerNode; rank++ {
		for i := range n {
			c := r.ring[(start+i)%n]
			sameDomain := mine != "" && c.domain == mine
			if c.peer.GetNodeId() == node || boolInt(c.manager)*2+boolInt(sameDomain) != rank {
				continue
			}
			out = append(out, c.peer)
			if len(out) == monitorsPerNode {
				break
			}
		}
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// monitorAsk is a monitor to ask about a lost node, with its hostname for
// the verdict's message.
type monitorAsk struct {
	peer *api.MonitorPeer
	name string
}

// asked is who to ask about lost node id: the monitors its session was
// last sent, or those it would be sent now when it had none this term.
func (r *monitorRing) asked(id string) []monitorAsk {
	peers := r.sent[id]
	if peers == nil {
		peers = r.pick(id)
	}
	out := make([]monitorAsk, len(peers))
	for i, p := range peers {
		out[i] = monitorAsk{p, r.names[p.GetNodeId()]}
	}
	return out
}

// NodeDialer opens a mutual-TLS connection to another node.
type NodeDialer func(addr string) (*grpc.ClientConn, error)

// WithNodeDialer lets the dispatcher ask a lost node's monitors whether
// they still hear it. Without one, every lost node is DOWN.
func WithNodeDialer(d NodeDialer) Option { return func(c *config) { c.dialNode = d } }

// verdict is what the monitors said of a lost node.
type verdict struct {
	state   api.NodeStatusState
	message string
}

// judge asks node's monitors whether they heard it within two heartbeat
// periods, each within one period: one that did makes it PARTITIONED.
func (s *Server) judge(ctx context.Context, node string, monitors []monitorAsk) verdict {
	down := verdict{api.NodeStatusState_NODE_STATUS_STATE_DOWN, "heartbeat missed for " + s.grace().String()}
	if s.cfg.dialNode == nil || len(monitors) == 0 {
		return down
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.period)
	defer cancel()
	type answer struct {
		ago time.Duration
		ok  bool
	}
	answers := make([]answer, len(monitors))
	var wg sync.WaitGroup
	for i, m := range monitors {
		wg.Go(func() {
			conn, err := s.cfg.dialNode(m.peer.GetAddress())
			if err != nil {
				return
			}
			defer conn.Close()
			resp, err := api.NewMonitorServiceClient(conn).LastHeard(ctx, &api.LastHeardRequest{NodeId: node})
			if err == nil && resp.GetHeard() {
				answers[i] = answer{resp.GetAgo().AsDuration(), true}
			}
		})
	}
	wg.Wait()
	var asked []string
	for i, a := range answers {
		asked = append(asked, monitors[i].name)
		if a.ok && a.ago <= 2*s.cfg.period {
			return verdict{api.NodeStatusState_NODE_STATUS_STATE_PARTITIONED, fmt.Sprintf(
				"partitioned: no heartbeat to the managers for %s, but its monitor %s heard it %s ago",
				s.grace(), monitors[i].name, a.ago.Round(time.Millisecond))}
		}
	}
	down.message += "; its monitors (" + strings.Join(asked, ", ") + ") did not hear it either"
	return down
}

// judgeAll judges the nodes of ask at once, each by its monitors.
func (s *Server) judgeAll(ctx context.Context, ask map[string][]monitorAsk) map[string]verdict {
	verdicts := make(map[string]verdict, len(ask))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id, monitors := range ask {
		wg.Go(func() {
			v := s.judge(ctx, id, monitors)
			mu.Lock()
			verdicts[id] = v
			mu.Unlock()
		})
	}
	wg.Wait()
	return verdicts
}

// rejudge asks the monitors of every PARTITIONED node again, each
// heartbeat period, until the node opens a session: a node its monitors
// stop hearing too has died, or is cut off from them as well, and is
// marked DOWN, so that its replicas are replaced after the down grace
// rather than the partition grace.
func (s *Server) rejudge(t *term) {
	tick := time.NewTicker(s.cfg.period)
	defer tick.Stop()
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-tick.C:
		}
		s.mu.Lock()
		ask := map[string][]monitorAsk{}
		for id := range t.monitors.partitioned {
			if t.sessions[id] == nil { // with a session, it is READY again
				ask[id] = t.monitors.asked(id)
			}
		}
		s.mu.Unlock()
		if len(ask) == 0 {
			continue
		}
		verdicts := s.judgeAll(t.ctx, ask)
		changes := map[string]nodeChange{}
		now := s.cfg.now()
		s.mu.Lock()
		for id, v := range verdicts {
			if v.state == api.NodeStatusState_NODE_STATUS_STATE_DOWN && t.sessions[id] == nil {
				changes[id] = nodeChange{state: v.state, message: "partitioned, then no longer heard: " + v.message, at: now}
			}
		}
		if len(changes) > 0 {
			t.nodes.add(changes)
		}
		s.mu.Unlock()
		if len(changes) > 0 {
			s.cfg.log.Info("partitioned nodes no longer heard by their monitors: down", "nodes", len(changes))
		}
	}
}
