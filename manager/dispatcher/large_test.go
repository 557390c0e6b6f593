package dispatcher

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

// bigTasks are n replicas on nodeID, each with a 100 KB spec: n=60 is
// 6 MB, beyond gRPC's 4 MiB message limit.
func bigTasks(prefix, nodeID string, n int) ([]store.Object, []string) {
	spec := &api.ServiceSpec{Name: "web", Image: "i", Env: []string{"PAD=" + strings.Repeat("x", 100<<10)}}
	var objs []store.Object
	var ids []string
	for i := range n {
		t := task(fmt.Sprintf("%s%02d", prefix, i), nodeID, running, assignedS)
		t.Spec = spec
		objs = append(objs, t)
		ids = append(ids, t.Id)
	}
	return objs, ids
}

// A node running many replicas of large specs gets its whole set in
// several COMPLETE messages, and a large batch of changes in several
// INCREMENTAL ones, each within gRPC's limit. In one message, the agent's
// stream failed ResourceExhausted and the node got no assignments at all.
func TestAssignmentsBeyondTheMessageLimit(t *testing.T) {
	h := newHarness(t, workerNode("n1"))
	objs, first := bigTasks("a", "n1", 60)
	h.create(objs...)
	h.run()
	c, _, sess := h.openSession("n1", nil)
	as, err := c.Assignments(h.ctxFor("n1"), &api.AssignmentsRequest{SessionId: sess.SessionId})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	parts := 0
	for more := true; more; {
		msg, err := recv(t, as)
		if err != nil {
			t.Fatalf("COMPLETE part %d: %v", parts+1, err)
		}
		if msg.Type != api.AssignmentsMessage_TYPE_COMPLETE {
			t.Fatalf("part %d is %v, want COMPLETE", parts+1, msg.Type)
		}
		parts++
		got = append(got, ids(msg.Updated)...)
		more = msg.More
	}
	if !slices.Equal(got, first) || parts < 2 {
		t.Fatalf("COMPLETE set in %d parts: %v, want %v in several", parts, got, first)
	}

	objs, second := bigTasks("b", "n1", 60)
	h.create(objs...)
	got = nil
	for len(got) < len(second) {
		msg, err := recv(t, as)
		if err != nil {
			t.Fatalf("INCREMENTAL after %d of %d replicas: %v", len(got), len(second), err)
		}
		if msg.Type != api.AssignmentsMessage_TYPE_INCREMENTAL || msg.More {
			t.Fatalf("got %v (more %v), want INCREMENTAL", msg.Type, msg.More)
		}
		got = append(got, ids(msg.Updated)...)
	}
	if !slices.Equal(got, second) {
		t.Fatalf("changes %v, want %v", got, second)
	}
}
