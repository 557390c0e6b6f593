package dispatcher

import (
	"slices"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// trackAll gives every node not yet DOWN or PARTITIONED, and not in a
// session here, a grace period to open one: startGrace for as many, which
// it returns with their number. Called with s.mu held.
func (s *Server) trackAll(t *term, nodes []*api.Node) (int, time.Duration) {
	var ids []string
	for _, n := range nodes {
		if st := n.GetStatus().GetState(); st != api.NodeStatusState_NODE_STATUS_STATE_DOWN &&
			st != api.NodeStatusState_NODE_STATUS_STATE_PARTITIONED && t.sessions[n.Id] == nil {
			ids = append(ids, n.Id)
		}
	}
	grace := s.startGrace(len(ids))
	deadline := s.cfg.now().Add(grace)
	for _, id := range ids {
		t.expiry.touch(id, deadline)
	}
	return len(ids), grace
}

// Nodes coming back to a new leader all at once (docs/adr/0047).
const (
	// returnPerNode is the time a new leader allows for each node that
	// must open a session, on top of the grace: 100 sessions a second.
	returnPerNode = 10 * time.Millisecond
	// maxReturnAllowance caps that allowance: a node that failed with the
	// old leader is marked DOWN at most this much later than the grace.
	maxReturnAllowance = 2 * time.Minute
)

// startGrace is how long n nodes that must all open a session here get
// before the silent ones are marked DOWN: the grace, plus returnPerNode
// for each. A manager restarted with 5 000 nodes spends its first seconds
// opening the store and its handshakes with all of them; within the bare
// 15 s only 833 had a session, the other 4 167 were marked DOWN and their
// replicas replaced, and the replacements kept it too busy for the rest
// (docs/bench/largestore.md, "Restarts with 5 000 nodes").
func (s *Server) startGrace(n int) time.Duration {
	return s.grace() + min(time.Duration(n)*returnPerNode, maxReturnAllowance)
}

// sweep marks nodes DOWN when their deadline passes, and refreshes the
// managers list.
func (s *Server) sweep(t *term) {
	tick := time.NewTicker(s.cfg.sweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-tick.C:
		}
		s.refreshManagers(t)
		s.expire(t)
	}
}

// expire ends the sessions of nodes whose deadline passed, asks their
// monitors whether they still hear them, and marks them PARTITIONED or
// DOWN; a failed write is tried again at the next sweep. A node that
// opened a session again while its monitors were asked is left READY.
func (s *Server) expire(t *term) {
	now := s.cfg.now()
	s.mu.Lock()
	ids := t.expiry.expired(now)
	if len(ids) == 0 {
		s.mu.Unlock()
		return
	}
	ask := make(map[string][]monitorAsk, len(ids))
	for _, id := range ids {
		if sess := t.sessions[id]; sess != nil {
			sess.end(reason.Error(codes.NotFound, reason.NotFound,
				"session %q expired: heartbeat missed for %s; open a new session", sess.id, s.grace()))
			delete(t.sessions, id)
		}
		ask[id] = t.monitors.asked(id)
	}
	s.mu.Unlock()
	verdicts := s.judgeAll(t.ctx, ask)

	s.mu.Lock()
	changes := make(map[string]nodeChange, len(ids))
	partitioned := 0
	for _, id := range ids {
		if t.sessions[id] != nil {
			continue // back meanwhile
		}
		changes[id] = nodeChange{state: verdicts[id].state, message: verdicts[id].message, at: now}
		if verdicts[id].state == api.NodeStatusState_NODE_STATUS_STATE_PARTITIONED {
			partitioned++
		}
	}
	done := t.nodes.add(changes)
	s.mu.Unlock()
	s.metrics.missedHeartbeats.Add(float64(len(ids)))
	s.cfg.log.Info("nodes missed their heartbeats", "nodes", len(ids), "partitioned", partitioned, "grace", s.grace())

	select {
	case err := <-done:
		if err == nil {
			return
		}
		s.cfg.log.Warn("mark nodes down or partitioned", "nodes", len(ids), "err", err)
		s.mu.Lock()
		for _, id := range ids {
			if t.sessions[id] == nil {
				t.expiry.touch(id, now)
			}
		}
		s.mu.Unlock()
	case <-t.ctx.Done():
	}
}

// refreshManagers sends every session the managers list when it changed.
func (s *Server) refreshManagers(t *term) {
	m := s.cfg.managers()
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Equal(m, t.managers) {
		return
	}
	t.managers = m
	for _, sess := range t.sessions {
		sess.notify()
	}
}
