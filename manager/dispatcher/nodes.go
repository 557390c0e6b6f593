package dispatcher

import (
	"context"
	"maps"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
	"github.com/jaco-project/jaco/manager/state/store"
)

// nodeChange is a status to record on a node object.
type nodeChange struct {
	state   api.NodeStatusState
	message string
	at      time.Time
	// description replaces the node's description when not nil.
	description *api.NodeDescription
}

// laterNodeChange: the newer decision about a node wins (a session opened
// after an expiry, or the reverse).
func laterNodeChange(_, newer nodeChange) nodeChange { return newer }

// writeNodes records node status changes; a node removed meanwhile is
// skipped, and so is a change the node already shows.
func (s *Server) writeNodes(ctx context.Context, items map[string]nodeChange) error {
	return writeChunked(ctx, s.st, slices.Sorted(maps.Keys(items)), func(tx *store.Tx, id string) int {
		c := items[id]
		n := tx.GetNode(id)
		if n == nil {
			return 0
		}
		if n.GetStatus().GetState() == c.state && n.GetStatus().GetMessage() == c.message &&
			(c.description == nil || proto.Equal(n.Description, c.description)) {
			return 0
		}
		n.Status = &api.NodeStatus{State: c.state, Message: c.message, Timestamp: timestamppb.New(c.at)}
		if c.description != nil {
			n.Description = c.description
		}
		if err := tx.Update(n); err != nil {
			s.cfg.log.Warn("record node status", "node_id", id, "state", enumword.Of(c.state), "err", err)
			return 0
		}
		return proto.Size(n)
	})
}

// watchNodes keeps sessions in step with their node objects: a changed
// node is sent to its agent, a removed node's session ends, a new node gets
// a grace period to open a session.
func (s *Server) watchNodes(t *term, events <-chan store.Event) {
	for e := range events {
		s.mu.Lock()
		switch e.Kind {
		case store.EventReset:
			var nodes []*api.Node
			s.st.View(func(tx store.ReadTx) { nodes = tx.ListNodes() })
			s.resyncNodes(t, nodes)
			t.peers.reset(nodes)
			t.monitors.reset(nodes)
			notifyAll(t)
		case store.EventCreate:
			n := e.Object.(*api.Node)
			if t.sessions[n.Id] == nil && !t.expiry.tracked(n.Id) {
				t.expiry.touch(n.Id, s.cfg.now().Add(s.grace()))
			}
			if ringChanged := t.monitors.set(n); t.peers.set(n) || ringChanged {
				notifyAll(t)
			}
		case store.EventUpdate:
			n := e.Object.(*api.Node)
			if sess := t.sessions[n.Id]; sess != nil {
				sess.setNode(n)
			}
			if ringChanged := t.monitors.set(n); t.peers.set(n) || ringChanged {
				notifyAll(t)
			}
		case store.EventDelete:
			n := e.Object.(*api.Node)
			s.removeNode(t, n.Id)
			t.monitors.remove(n.Id)
			if t.peers.remove(n.Id) {
				notifyAll(t)
			}
		}
		s.mu.Unlock()
	}
}

// resyncNodes follows a store restore. Called with s.mu held.
func (s *Server) resyncNodes(t *term, nodes []*api.Node) {
	byID := make(map[string]*api.Node, len(nodes))
	for _, n := range nodes {
		byID[n.Id] = n
	}
	for id, sess := range t.sessions {
		if n := byID[id]; n != nil {
			sess.setNode(n)
		} else {
			s.removeNode(t, id)
		}
	}
	s.trackAll(t, nodes)
}

// removeNode ends a removed node's session. Called with s.mu held.
func (s *Server) removeNode(t *term, id string) {
	t.expiry.forget(id)
	if sess := t.sessions[id]; sess != nil {
		sess.end(errNodeRemoved(id))
		delete(t.sessions, id)
	}
}

// notifyAll wakes every session to send what changed. Called with
// Server.mu held.
func notifyAll(t *term) {
	for _, sess := range t.sessions {
		sess.notify()
	}
}
