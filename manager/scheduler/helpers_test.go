package scheduler

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

const gib = 1 << 30

// readyNode is a READY, ACTIVE worker with 4 CPUs and 4 GiB and the given
// labels (key, value, key, value...).
func readyNode(id string, labels ...string) *api.Node {
	n := &api.Node{
		Id: id, Hostname: "host-" + id, Meta: &api.Meta{},
		Role:        api.NodeRole_NODE_ROLE_WORKER,
		Status:      &api.NodeStatus{State: api.NodeStatusState_NODE_STATUS_STATE_READY},
		Description: &api.NodeDescription{Resources: &api.Resources{NanoCpus: 4e9, MemoryBytes: 4 * gib}},
		Labels:      map[string]string{},
	}
	for i := 0; i+1 < len(labels); i += 2 {
		n.Labels[labels[i]] = labels[i+1]
	}
	return n
}

func imageSpec(name string) *api.ServiceSpec {
	return &api.ServiceSpec{Name: name, Image: "busybox", Placement: &api.Placement{}}
}

// pendingTasks makes n PENDING tasks of service svc (id = name) with spec.
func pendingTasks(spec *api.ServiceSpec, n int) []*api.Task {
	out := make([]*api.Task, n)
	for i := range out {
		out[i] = &api.Task{
			Id: fmt.Sprintf("%s.%03d", spec.GetName(), i+1), Meta: &api.Meta{},
			ServiceId: spec.GetName(), ServiceName: spec.GetName(), Slot: uint64(i + 1),
			DesiredState: api.TaskState_TASK_STATE_RUNNING,
			Status:       &api.TaskStatus{State: api.TaskState_TASK_STATE_PENDING},
			Spec:         spec,
		}
	}
	return out
}

// tasksAsObjects is tasks as store objects, for testIndex and
// storetest.Create.
func tasksAsObjects(tasks []*api.Task) []store.Object {
	out := make([]store.Object, len(tasks))
	for i, t := range tasks {
		out[i] = t
	}
	return out
}

// runningTask is a RUNNING task of spec's service on node.
func runningTask(id string, spec *api.ServiceSpec, node string) *api.Task {
	t := pendingTasks(spec, 1)[0]
	t.Id, t.NodeId = id, node
	t.Status.State = api.TaskState_TASK_STATE_RUNNING
	return t
}

func service(spec *api.ServiceSpec) *api.Service {
	return &api.Service{Id: spec.GetName(), Meta: &api.Meta{}, Spec: spec}
}

// testIndex builds an index from objects (nodes, services, tasks).
func testIndex(objs ...store.Object) *index {
	ix := newIndex()
	for _, o := range objs {
		ix.apply(store.Event{Kind: store.EventCreate, Object: proto.Clone(o).(store.Object)})
	}
	return ix
}

func testScheduler(opts ...Option) *Scheduler {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return New(nil, append([]Option{WithClock(func() time.Time { return now })}, opts...)...)
}

// outcome is what one decide pass did: node per assigned task, and
// reason: message per pending task that got a status write.
type outcome struct {
	node    map[string]string
	pending map[string]string
}

func decideOnce(t *testing.T, ix *index) outcome {
	t.Helper()
	out := outcome{node: map[string]string{}, pending: map[string]string{}}
	for _, w := range testScheduler().decide(ix) {
		if w.task.GetStatus().GetState() == api.TaskState_TASK_STATE_ASSIGNED {
			out.node[w.task.GetId()] = w.task.GetNodeId()
		} else {
			out.pending[w.task.GetId()] = w.task.GetStatus().GetReason() + ": " + w.task.GetStatus().GetMessage()
		}
	}
	return out
}

// perNode counts assigned tasks per node.
func (o outcome) perNode() map[string]int {
	m := map[string]int{}
	for _, n := range o.node {
		m[n]++
	}
	return m
}

func (o outcome) String() string {
	var lines []string
	for id, n := range o.node {
		lines = append(lines, id+" → "+n)
	}
	for id, r := range o.pending {
		lines = append(lines, id+" pending "+r)
	}
	sort.Strings(lines)
	return fmt.Sprint(lines)
}

// viewed is a condition of waitfor.Holds over views of st: cond holds in
// a view; when it does not, describe says what that view held.
func viewed(st *store.Store, cond func(tx store.ReadTx) bool, describe func(tx store.ReadTx) string) func() (bool, string) {
	return func() (ok bool, seen string) {
		st.View(func(tx store.ReadTx) {
			if ok = cond(tx); !ok {
				seen = describe(tx)
			}
		})
		return ok, seen
	}
}

func describeTasks(tx store.ReadTx) string {
	var s []string
	for _, t := range tx.ListTasks() {
		s = append(s, fmt.Sprintf("%s:%s@%q(%s: %s)", t.GetId(), t.GetStatus().GetState(), t.GetNodeId(),
			t.GetStatus().GetReason(), t.GetStatus().GetMessage()))
	}
	return fmt.Sprint(s)
}
