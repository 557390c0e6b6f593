package dispatcher

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/apierror"
	"github.com/jaco-project/jaco/manager/state/store"
)

// session is one node's open session on this leader.
type session struct {
	id     string
	nodeID string
	// done closes when the session ends; err says why.
	done    chan struct{}
	endOnce sync.Once
	err     error
	// changed signals the Session stream that node or managers changed.
	changed chan struct{}
	node    *api.Node // latest seen; guarded by Server.mu
}

func newSession(nodeID string) (*session, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("read random session id: %w", err)
	}
	return &session{id: hex.EncodeToString(b[:]), nodeID: nodeID,
		done: make(chan struct{}), changed: make(chan struct{}, 1)}, nil
}

// end closes the session's streams with err; later calls do nothing.
func (s *session) end(err error) {
	s.endOnce.Do(func() {
		s.err = err
		close(s.done)
	})
}

func (s *session) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// setNode records a newer node object. Called with Server.mu held.
func (s *session) setNode(n *api.Node) {
	if n.GetMeta().GetVersion() < s.node.GetMeta().GetVersion() {
		return // a lagging watch event; refreshNode read further
	}
	s.node = n
	s.notify()
}

// Session implements api.DispatcherServiceServer.
func (s *Server) Session(req *api.SessionRequest, stream grpc.ServerStreamingServer[api.SessionMessage]) error {
	ctx := stream.Context()
	nodeID, err := caller(ctx)
	if err != nil {
		return err
	}
	desc, err := checkDescription(req.GetDescription())
	if err != nil {
		return err
	}
	t, err := s.current()
	if err != nil {
		return err
	}
	sess, err := s.open(t, nodeID, desc)
	if err != nil {
		return err
	}
	defer s.close(t, sess)
	if err := s.waitWrite(ctx, t, sess, t.nodes.add(map[string]nodeChange{nodeID: {
		state:       api.NodeStatusState_NODE_STATUS_STATE_READY,
		message:     "session open",
		at:          s.cfg.now(),
		description: desc,
	}})); err != nil {
		return err
	}
	s.refreshNode(sess)
	s.cfg.log.Info("session open", "node_id", nodeID, "session_id", sess.id)
	first := true
	var sent uint64 // meta.version of the node last sent
	var sentManagers []string
	var sentPeers uint64 // t.peers.version last sent
	var sentNets []netVersion
	var sentMonitors []*api.MonitorPeer
	for {
		// Every message carries the whole peer set, and the node's whole
		// networks and endpoints: the agent replaces its link's peers, its
		// DNS records and its VIP rules with them (docs/adr/0026).
		s.mu.Lock()
		node, managers, peersVersion := sess.node, t.managers, t.peers.version
		nets := t.endpoints.versions(node)
		monitors := t.monitors.pick(sess.nodeID)
		send := first || node.GetMeta().GetVersion() != sent || !slices.Equal(managers, sentManagers) ||
			peersVersion != sentPeers || !slices.Equal(nets, sentNets) || !slices.Equal(monitors, sentMonitors)
		var peers []*api.OverlayPeer
		var networks []*api.Network
		var endpoints []*api.ServiceEndpoint
		if send {
			peers = t.peers.except(sess.nodeID)
			networks, endpoints = t.endpoints.view(nets)
			t.monitors.sent[sess.nodeID] = monitors
		}
		s.mu.Unlock()
		if send {
			first = false
			msg := &api.SessionMessage{SessionId: sess.id, Managers: managers,
				HeartbeatPeriod: durationpb.New(s.cfg.period), Node: node, OverlayPeers: peers,
				Networks: networks, Endpoints: endpoints, Monitors: monitors}
			if err := stream.Send(msg); err != nil {
				return err
			}
			sent, sentManagers, sentPeers, sentNets, sentMonitors = node.GetMeta().GetVersion(), managers, peersVersion, nets, monitors
		}
		select {
		case <-sess.changed:
		case <-sess.done:
			return sess.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// refreshNode reads sess's node from the store, so the first message shows
// what the session's own write recorded even before the watch reports it.
func (s *Server) refreshNode(sess *session) {
	var n *api.Node
	s.st.View(func(tx store.ReadTx) { n = tx.GetNode(sess.nodeID) })
	s.mu.Lock()
	defer s.mu.Unlock()
	if n != nil && n.GetMeta().GetVersion() > sess.node.GetMeta().GetVersion() {
		sess.node = n
	}
}

// open registers a new session for nodeID, ending the one it replaces.
func (s *Server) open(t *term, nodeID string, desc *api.NodeDescription) (*session, error) {
	var node *api.Node
	s.st.View(func(tx store.ReadTx) { node = tx.GetNode(nodeID) })
	if node == nil {
		return nil, errNodeRemoved(nodeID)
	}
	sess, err := newSession(nodeID)
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.term != t {
		return nil, errNoLeader()
	}
	if old := t.sessions[nodeID]; old != nil {
		old.end(reason.Error(codes.NotFound, reason.NotFound,
			"session %q was replaced by a newer session of this node", old.id))
	}
	sess.node = node
	t.sessions[nodeID] = sess
	t.expiry.touch(nodeID, s.cfg.now().Add(s.grace()))
	return sess, nil
}

// close forgets sess if it is still its node's session. The node keeps its
// deadline: an agent that went away is marked DOWN when it passes.
func (s *Server) close(t *term, sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.sessions[sess.nodeID] == sess {
		delete(t.sessions, sess.nodeID)
	}
	sess.end(errStaleSession(sess.id))
}

// waitWrite waits for a batched write's outcome, or for whatever ends the
// call first.
func (s *Server) waitWrite(ctx context.Context, t *term, sess *session, done <-chan error) error {
	select {
	case err := <-done:
		return apierror.ToStatus(err)
	case <-t.ctx.Done():
		return errNoLeader()
	case <-sess.done:
		return sess.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Heartbeat implements api.DispatcherServiceServer.
func (s *Server) Heartbeat(ctx context.Context, req *api.HeartbeatRequest) (*api.HeartbeatResponse, error) {
	t, sess, err := s.session(ctx, req.GetSessionId())
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if t.sessions[sess.nodeID] == sess {
		t.expiry.touch(sess.nodeID, s.cfg.now().Add(s.grace()))
	}
	s.mu.Unlock()
	return &api.HeartbeatResponse{Period: durationpb.New(s.cfg.period)}, nil
}
