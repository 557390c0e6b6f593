package dispatcher

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
)

// wantErr checks err's code and reason word.
func wantErr(t *testing.T, what string, err error, code codes.Code, word string) {
	t.Helper()
	if status.Code(err) != code || reason.Of(err) != word {
		t.Fatalf("%s: err = %v; want %v with reason %s", what, err, code, word)
	}
}

// openSession opens a session for node and returns its stream and first
// message.
func (h *harness) openSession(node string, desc *api.NodeDescription) (api.DispatcherServiceClient, api.DispatcherService_SessionClient, *api.SessionMessage) {
	h.t.Helper()
	c, ctx := h.client(nodeID(node))
	stream, err := c.Session(ctx, &api.SessionRequest{Description: desc})
	if err != nil {
		h.t.Fatal(err)
	}
	msg, err := recv(h.t, stream)
	if err != nil {
		h.t.Fatalf("first session message: %v", err)
	}
	return c, stream, msg
}

func TestSessionMarksNodeReady(t *testing.T) {
	h := newHarness(t, workerNode("n1"))
	h.run()
	desc := &api.NodeDescription{Hostname: "w1", Resources: &api.Resources{NanoCpus: 2e9, MemoryBytes: 1 << 30},
		Runtimes: []string{"containerd", "hooks"}}
	_, stream, msg := h.openSession("n1", desc)

	if msg.SessionId == "" || msg.HeartbeatPeriod.AsDuration() != 5*time.Second ||
		len(msg.Managers) != 1 || msg.Managers[0] != "198.18.0.1:7000" {
		t.Fatalf("first message = %v", msg)
	}
	if msg.Node.GetStatus().GetState() != api.NodeStatusState_NODE_STATUS_STATE_READY || msg.Node.GetDescription().GetHostname() != "w1" {
		t.Fatalf("first message shows the node before its session: %v", msg.Node)
	}
	n := h.node("n1")
	if n.Status.State != api.NodeStatusState_NODE_STATUS_STATE_READY || n.Status.Message != "session open" ||
		!n.Status.Timestamp.AsTime().Equal(h.clock.Now()) || n.Description.Resources.NanoCpus != 2e9 ||
		len(n.Description.Runtimes) != 2 {
		t.Fatalf("stored node = %v", n)
	}

	// A change of the node object or of the managers is sent again.
	h.managers.Store(&[]string{"198.18.0.1:7000", "198.18.0.2:7000"})
	msg2, err := recv(t, stream)
	if err != nil || len(msg2.Managers) != 2 || msg2.SessionId != msg.SessionId {
		t.Fatalf("after managers change: %v, %v", msg2, err)
	}
	if err := h.st.Update(t.Context(), func(tx *store.Tx) error {
		n := tx.GetNode("n1")
		n.Labels = map[string]string{"zone": "a"}
		return tx.Update(n)
	}); err != nil {
		t.Fatal(err)
	}
	msg3, err := recv(t, stream)
	if err != nil || msg3.Node.Labels["zone"] != "a" {
		t.Fatalf("after node change: %v, %v", msg3, err)
	}
}

func TestMissedHeartbeatsMarkNodeDown(t *testing.T) {
	h := newHarness(t, workerNode("n1"))
	h.run()
	c, stream, msg := h.openSession("n1", nil)

	// Heartbeats within the grace period keep the node up.
	for range 3 {
		h.clock.Advance(14 * time.Second)
		resp, err := c.Heartbeat(h.ctxFor("n1"), &api.HeartbeatRequest{SessionId: msg.SessionId})
		if err != nil || resp.Period.AsDuration() != 5*time.Second {
			t.Fatalf("heartbeat: %v, %v", resp, err)
		}
	}
	h.sweep()
	if st, _ := h.nodeState("n1"); st != api.NodeStatusState_NODE_STATUS_STATE_READY {
		t.Fatalf("node %v despite heartbeats", st)
	}

	h.clock.Advance(15 * time.Second)
	h.eventually("node DOWN", func() (bool, string) {
		st, m := h.nodeState("n1")
		return st == api.NodeStatusState_NODE_STATUS_STATE_DOWN && m == "heartbeat missed for 15s", fmt.Sprint(st, " ", m)
	})
	// The session ended: the agent must open a new one.
	_, err := recv(t, stream)
	wantErr(t, "session stream after expiry", err, codes.NotFound, reason.NotFound)
	_, err = c.Heartbeat(h.ctxFor("n1"), &api.HeartbeatRequest{SessionId: msg.SessionId})
	wantErr(t, "heartbeat of the expired session", err, codes.NotFound, reason.NotFound)

	// A new session brings it back.
	h.openSession("n1", nil)
	if st, _ := h.nodeState("n1"); st != api.NodeStatusState_NODE_STATUS_STATE_READY {
		t.Fatalf("node %v after a new session", st)
	}
}

func TestRunStartGivesEveryNodeGrace(t *testing.T) {
	// READY under the previous leader, or never seen: all get a full grace
	// period and 10 ms more for each of them (15 s + 300 × 10 ms); the
	// ones already DOWN are left alone. Many nodes expire at once: their
	// DOWN writes share proposals.
	const many = 300
	var nodes []*api.Node
	for i := range many {
		n := workerNode(fmt.Sprintf("n%03d", i))
		n.Status = &api.NodeStatus{State: api.NodeStatusState_NODE_STATUS_STATE_READY, Message: "session open"}
		nodes = append(nodes, n)
	}
	down := workerNode("down")
	down.Status = &api.NodeStatus{State: api.NodeStatusState_NODE_STATUS_STATE_DOWN, Message: "old"}
	h := newHarness(t, append(nodes, down)...)
	h.run()
	h.openSession("n000", nil) // this one keeps heartbeating
	c, _ := h.client(nodeID("n000"))
	var sid string
	h.srv.mu.Lock()
	sid = h.srv.term.sessions["n000"].id
	h.srv.mu.Unlock()

	h.clock.Advance(14 * time.Second)
	if _, err := c.Heartbeat(h.ctxFor("n000"), &api.HeartbeatRequest{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(3900 * time.Millisecond) // past the bare grace, within the allowance
	h.sweep()
	if st, _ := h.nodeState("n001"); st != api.NodeStatusState_NODE_STATUS_STATE_READY {
		t.Fatalf("node marked %v 17.9 s after the leader started, within 15 s + 300 × 10 ms", st)
	}
	before := h.prop.Proposals()
	h.clock.Advance(200 * time.Millisecond)
	h.eventually("silent nodes DOWN", func() (bool, string) {
		for _, n := range nodes[1:] {
			if st, _ := h.nodeState(n.Id); st != api.NodeStatusState_NODE_STATUS_STATE_DOWN {
				return false, fmt.Sprintf("%s is %v", n.Id, st)
			}
		}
		return true, ""
	})
	if got := h.prop.Proposals() - before; got > 3 {
		t.Errorf("%d nodes marked DOWN in %d proposals; want them batched", many-1, got)
	}
	if st, _ := h.nodeState("n000"); st != api.NodeStatusState_NODE_STATUS_STATE_READY {
		t.Errorf("heartbeating node is %v", st)
	}
	if _, m := h.nodeState("down"); m != "old" {
		t.Errorf("node already DOWN was rewritten: %q", m)
	}
}

func TestStartGraceGrowsWithTheNodesToReturn(t *testing.T) {
	s := New(nil)
	for _, tc := range []struct {
		nodes int
		want  time.Duration
	}{
		{0, 15 * time.Second},
		{1, 15*time.Second + 10*time.Millisecond},
		{5000, 65 * time.Second},
		{1_000_000, 15*time.Second + 2*time.Minute}, // capped
	} {
		if got := s.startGrace(tc.nodes); got != tc.want {
			t.Errorf("startGrace(%d) = %v, want %v", tc.nodes, got, tc.want)
		}
	}
}

func TestStaleSessionsRefused(t *testing.T) {
	h := newHarness(t, workerNode("n1"))
	h.run()
	c, oldStream, old := h.openSession("n1", nil)
	_, err := c.Heartbeat(h.ctxFor("n1"), &api.HeartbeatRequest{SessionId: "bogus"})
	wantErr(t, "unknown session id", err, codes.NotFound, reason.NotFound)

	// A new session replaces the old one: its streams end, its id stops working.
	_, _, cur := h.openSession("n1", nil)
	_, err = recv(t, oldStream)
	wantErr(t, "replaced session's stream", err, codes.NotFound, reason.NotFound)
	_, err = c.Heartbeat(h.ctxFor("n1"), &api.HeartbeatRequest{SessionId: old.SessionId})
	wantErr(t, "replaced session's heartbeat", err, codes.NotFound, reason.NotFound)
	as, err := c.Assignments(h.ctxFor("n1"), &api.AssignmentsRequest{SessionId: old.SessionId})
	if err == nil {
		_, err = recv(t, as)
	}
	wantErr(t, "replaced session's assignments", err, codes.NotFound, reason.NotFound)
	if _, err := c.Heartbeat(h.ctxFor("n1"), &api.HeartbeatRequest{SessionId: cur.SessionId}); err != nil {
		t.Fatalf("current session's heartbeat: %v", err)
	}
	// Another node cannot use this node's session.
	h.create(workerNode("n2"))
	_, err = c.Heartbeat(h.ctxFor("n2"), &api.HeartbeatRequest{SessionId: cur.SessionId})
	wantErr(t, "another node's session", err, codes.NotFound, reason.NotFound)
}

func TestRemovedNode(t *testing.T) {
	h := newHarness(t, workerNode("n1"))
	h.run()
	c, ctx := h.client(nodeID("gone"))
	s, err := c.Session(ctx, &api.SessionRequest{})
	if err == nil {
		_, err = recv(t, s)
	}
	wantErr(t, "session of an unknown node", err, codes.PermissionDenied, reason.NodeRemoved)

	_, stream, _ := h.openSession("n1", nil)
	if err := h.st.Update(t.Context(), func(tx *store.Tx) error { return tx.Delete(tx.GetNode("n1")) }); err != nil {
		t.Fatal(err)
	}
	_, err = recv(t, stream)
	wantErr(t, "session of a node removed meanwhile", err, codes.PermissionDenied, reason.NodeRemoved)
}

func TestRunEndClosesStreams(t *testing.T) {
	h := newHarness(t, workerNode("n1"))
	c, ctx := h.client(nodeID("n1"))
	_, err := c.Heartbeat(ctx, &api.HeartbeatRequest{SessionId: "x"})
	wantErr(t, "heartbeat before Run", err, codes.Unavailable, reason.NoLeader)

	h.run()
	_, stream, msg := h.openSession("n1", nil)
	as, err := c.Assignments(ctx, &api.AssignmentsRequest{SessionId: msg.SessionId})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := recv(t, as); err != nil {
		t.Fatal(err)
	}
	h.stop()
	_, err = recv(t, stream)
	wantErr(t, "session stream after Run", err, codes.Unavailable, reason.NoLeader)
	if !reason.Retryable(err) {
		t.Errorf("no_leader is not retryable: %v", err)
	}
	_, err = recv(t, as)
	wantErr(t, "assignments stream after Run", err, codes.Unavailable, reason.NoLeader)
	_, err = c.Heartbeat(ctx, &api.HeartbeatRequest{SessionId: msg.SessionId})
	wantErr(t, "heartbeat after Run", err, codes.Unavailable, reason.NoLeader)

	// Leading again: sessions of the earlier term are unknown.
	h.run()
	_, err = c.Heartbeat(ctx, &api.HeartbeatRequest{SessionId: msg.SessionId})
	wantErr(t, "heartbeat of a session of an earlier term", err, codes.NotFound, reason.NotFound)
}

func TestOnlyNodesMayCall(t *testing.T) {
	h := newHarness(t, workerNode("n1"))
	h.run()
	for _, id := range []identity.Identity{{Kind: identity.Operator}, {Kind: identity.Anonymous}, {Kind: identity.Local}} {
		c, ctx := h.client(id)
		_, err := c.Heartbeat(ctx, &api.HeartbeatRequest{})
		wantErr(t, id.String()+" Heartbeat", err, codes.PermissionDenied, reason.PermissionDenied)
		_, err = c.UpdateTaskStatus(ctx, &api.UpdateTaskStatusRequest{})
		wantErr(t, id.String()+" UpdateTaskStatus", err, codes.PermissionDenied, reason.PermissionDenied)
		s, err := c.Session(ctx, &api.SessionRequest{})
		if err == nil {
			_, err = recv(t, s)
		}
		wantErr(t, id.String()+" Session", err, codes.PermissionDenied, reason.PermissionDenied)
		a, err := c.Assignments(ctx, &api.AssignmentsRequest{})
		if err == nil {
			_, err = recv(t, a)
		}
		wantErr(t, id.String()+" Assignments", err, codes.PermissionDenied, reason.PermissionDenied)
	}
}
