package dispatcher

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

// waitEndpoints reads session messages until one shows want
// (endpointsSeen), and returns when it came.
func waitEndpoints(t *testing.T, stream api.DispatcherService_SessionClient, want string) time.Time {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		msg, err := recv(t, stream)
		if err != nil {
			t.Fatal(err)
		}
		if last = endpointsSeen(msg.Networks, msg.Endpoints); last == want {
			return time.Now()
		}
	}
	t.Fatalf("endpoints not reached in 5s; last seen %q, want %q", last, want)
	return time.Time{}
}

// TestSessionsFollowEndpoints: a node holding a block of a network is sent
// the network and its services' endpoints, and again at once when a
// replica starts serving or its node goes DOWN; a node holding no block
// gets neither. An address outside the reporting node's block is kept out.
func TestSessionsFollowEndpoints(t *testing.T) {
	h := newHarness(t, readyNode("n1", "a=10.0.0.0/26"), readyNode("n2", "a=10.0.0.64/26"), readyNode("n3"))
	h.create(overlayNetwork("a", "front", "10.0.0.0/16"), overlayNetwork("b", "back", "10.1.0.0/16"),
		netService("web", 0, []string{"front"}, "a=10.0.255.193"),
		task("t1", "n2", running, assignedS), task("t2", "n2", running, assignedS))
	h.change("t1", func(tk *api.Task) { tk.ServiceId = "web" })
	h.change("t2", func(tk *api.Task) { tk.ServiceId = "web" })
	h.run()

	_, s1, first := h.openSession("n1", nil)
	if got, want := endpointsSeen(first.Networks, first.Endpoints), "a | a/web 10.0.255.193 [];"; got != want {
		t.Fatalf("n1's first message shows %q, want %q", got, want)
	}
	_, _, first3 := h.openSession("n3", nil)
	if len(first3.Networks)+len(first3.Endpoints) != 0 {
		t.Fatalf("n3 holds no block but was sent %q", endpointsSeen(first3.Networks, first3.Endpoints))
	}
	c2, _, sess2 := h.openSession("n2", nil)
	report := func(id, addr string) {
		t.Helper()
		st := &api.TaskStatus{State: running, Addresses: []*api.NetworkAddress{{NetworkId: "a", Address: addr}}}
		if _, err := c2.UpdateTaskStatus(h.ctxFor("n2"), &api.UpdateTaskStatusRequest{SessionId: sess2.SessionId,
			Updates: []*api.TaskStatusUpdate{{TaskId: id, Status: st}}}); err != nil {
			t.Fatal(err)
		}
	}

	// n2's replica starts serving: n1 hears of it well within the second
	// a node's view may lag the store by (docs/operator-guide.md, "Names").
	start := time.Now()
	report("t1", "10.0.0.66")
	if took := waitEndpoints(t, s1, "a | a/web 10.0.255.193 [t1@n2=10.0.0.66];").Sub(start); took > time.Second {
		t.Errorf("RUNNING reached n1's view in %v, want under 1s", took)
	}

	// An address in n1's block, reported by n2: RUNNING counts, the
	// address does not.
	report("t2", "10.0.0.5")
	if st := h.task("t2").GetStatus(); st.GetState() != running || len(st.GetAddresses()) != 0 {
		t.Fatalf("t2's status %v: want RUNNING without the foreign address", st)
	}

	// n2 goes DOWN: its replica leaves n1's view, its task stays.
	if err := h.st.Update(context.Background(), func(tx *store.Tx) error {
		n := tx.GetNode("n2")
		n.Status = &api.NodeStatus{State: api.NodeStatusState_NODE_STATUS_STATE_DOWN}
		return tx.Update(n)
	}); err != nil {
		t.Fatal(err)
	}
	waitEndpoints(t, s1, "a | a/web 10.0.255.193 [];")
	if h.task("t1") == nil {
		t.Fatal("the DOWN node's task was removed from the store")
	}
}

func TestCheckAddresses(t *testing.T) {
	n := readyNode("n1", "a=10.0.0.64/26")
	for _, tc := range []struct {
		name  string
		addrs []*api.NetworkAddress
		ok    bool
	}{
		{"in its block", []*api.NetworkAddress{{NetworkId: "a", Address: "10.0.0.70"}}, true},
		{"another node's block", []*api.NetworkAddress{{NetworkId: "a", Address: "10.0.0.5"}}, false},
		{"a network it holds no block of", []*api.NetworkAddress{{NetworkId: "b", Address: "10.0.0.70"}}, false},
		{"not an address", []*api.NetworkAddress{{NetworkId: "a", Address: "10.0.0.70/26"}}, false},
		{"twice on one network", []*api.NetworkAddress{{NetworkId: "a", Address: "10.0.0.70"}, {NetworkId: "a", Address: "10.0.0.71"}}, false},
	} {
		if err := checkAddresses(n, &api.TaskStatus{Addresses: tc.addrs}); (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// TestEndpointsAfterBurstAndRestore: forty replicas reported in one call
// all reach another node's view; a store restore replaces the view with
// the restored one.
func TestEndpointsAfterBurstAndRestore(t *testing.T) {
	h := newHarness(t, readyNode("n1", "a=10.0.0.0/26"), readyNode("n2", "a=10.0.0.64/26"))
	h.create(overlayNetwork("a", "front", "10.0.0.0/16"), netService("web", api.EndpointMode_ENDPOINT_MODE_DNSRR, []string{"front"}))
	var updates []*api.TaskStatusUpdate
	want := "a | a/web  ["
	for i := range 40 {
		id := fmt.Sprintf("t%02d", i)
		tk := task(id, "n2", running, assignedS)
		tk.ServiceId = "web"
		h.create(tk)
		addr := fmt.Sprintf("10.0.0.%d", 66+i)
		updates = append(updates, &api.TaskStatusUpdate{TaskId: id, Status: &api.TaskStatus{State: running,
			Addresses: []*api.NetworkAddress{{NetworkId: "a", Address: addr}}}})
		if i > 0 {
			want += " "
		}
		want += id + "@n2=" + addr
	}
	want += "];"
	h.run()
	_, s1, _ := h.openSession("n1", nil)
	c2, _, sess2 := h.openSession("n2", nil)
	if _, err := c2.UpdateTaskStatus(h.ctxFor("n2"), &api.UpdateTaskStatusRequest{SessionId: sess2.SessionId, Updates: updates}); err != nil {
		t.Fatal(err)
	}
	waitEndpoints(t, s1, want)

	snap := h.st.Save()
	snap.Tasks = []*api.Task{replicaTask("r1", "web", "n2", "a=10.0.0.70")}
	if err := h.st.Restore(snap, h.st.AppliedIndex()); err != nil {
		t.Fatal(err)
	}
	waitEndpoints(t, s1, "a | a/web  [r1@n2=10.0.0.70];")
}
