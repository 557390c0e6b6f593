package controlapi

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

type recordingRemover struct {
	mu      sync.Mutex
	removed []string
}

func (r *recordingRemover) RemoveNode(_ context.Context, n *api.Node) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removed = append(r.removed, n.Id)
	return nil
}

// drainCluster: w1 runs a replica of "web" and one of "db", pinned to
// w1; w2 runs nothing.
func drainCluster(t *testing.T) (*Server, *store.Store, *recordingRemover) {
	t.Helper()
	st := storetest.New(t)
	running := &api.TaskStatus{State: api.TaskState_TASK_STATE_RUNNING}
	storetest.Create(t, st,
		&api.Node{Id: "w1", Hostname: "w1"},
		&api.Node{Id: "w2", Hostname: "w2"},
		&api.Service{Id: "web", Spec: &api.ServiceSpec{Name: "web", Replicas: 1}},
		&api.Service{Id: "db", Spec: &api.ServiceSpec{Name: "db", Replicas: 1, Placement: &api.Placement{PinNode: "w1"}}},
		&api.Task{Id: "t-web", ServiceId: "web", Slot: 1, NodeId: "w1", DesiredState: api.TaskState_TASK_STATE_RUNNING, Status: running},
		&api.Task{Id: "t-db", ServiceId: "db", Slot: 1, NodeId: "w1", DesiredState: api.TaskState_TASK_STATE_RUNNING, Status: running},
	)
	rm := &recordingRemover{}
	return New(st, WithNodeRemover(rm)), st, rm
}

func getNode(st *store.Store, id string) (n *api.Node) {
	st.View(func(tx store.ReadTx) { n = tx.GetNode(id) })
	return n
}

func TestDrainRefusedForPinnedReplicasUnlessForced(t *testing.T) {
	s, st, rm := drainCluster(t)
	ctx := context.Background()
	drain := api.NodeAvailability_NODE_AVAILABILITY_DRAIN
	_, err := s.UpdateNode(ctx, &api.UpdateNodeRequest{Node: "w1", Availability: &drain})
	if reason.Of(err) != reason.NodeHostsPinnedReplicas || reason.Sentence(err) != "node hosts pinned replicas: [t-db]" {
		t.Fatalf("drain w1: %v, want node_hosts_pinned_replicas naming t-db", err)
	}
	if _, err := s.RemoveNode(ctx, &api.RemoveNodeRequest{Node: "w1"}); reason.Of(err) != reason.NodeHostsPinnedReplicas {
		t.Fatalf("remove w1: %v, want node_hosts_pinned_replicas", err)
	}
	if n := getNode(st, "w1"); n.Availability != api.NodeAvailability_NODE_AVAILABILITY_ACTIVE || n.Drain != nil || len(rm.removed) != 0 {
		t.Fatalf("refused drain changed the node: %v (removed %v)", n, rm.removed)
	}

	resp, err := s.UpdateNode(ctx, &api.UpdateNodeRequest{Node: "w1", Availability: &drain, Force: true, DrainTimeout: durationpb.New(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	d := resp.Node.Drain
	if resp.Node.Availability != drain || d.GetState() != api.DrainState_DRAIN_STATE_DRAINING || !d.Force || d.Remove ||
		d.ReplacementTimeout.AsDuration() != time.Minute || d.StartedAt == nil {
		t.Fatalf("forced drain wrote %v, want DRAINING, force, 1m, not remove", resp.Node)
	}

	active := api.NodeAvailability_NODE_AVAILABILITY_ACTIVE
	resp, err = s.UpdateNode(ctx, &api.UpdateNodeRequest{Node: "w1", Availability: &active})
	if err != nil || resp.Node.Drain.GetState() != api.DrainState_DRAIN_STATE_NONE || resp.Node.Availability != active {
		t.Fatalf("cancel: %v %v, want active with no drain", resp, err)
	}
	if _, err := s.UpdateNode(ctx, &api.UpdateNodeRequest{Node: "w1", Availability: &drain, DrainTimeout: durationpb.New(-time.Second)}); reason.Of(err) != reason.InvalidSpec {
		t.Fatalf("negative timeout: %v, want invalid_spec", err)
	}
}

func TestRemoveNodeDrainsFirstAndRemovesAnEmptyNodeAtOnce(t *testing.T) {
	s, st, rm := drainCluster(t)
	ctx := context.Background()
	if _, err := s.RemoveNode(ctx, &api.RemoveNodeRequest{Node: "w2"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rm.removed, []string{"w2"}) {
		t.Fatalf("empty w2: removed %v, want w2 at once", rm.removed)
	}
	if _, err := s.RemoveNode(ctx, &api.RemoveNodeRequest{Node: "w1", Force: true}); err != nil {
		t.Fatal(err)
	}
	n := getNode(st, "w1")
	d := n.GetDrain()
	if len(rm.removed) != 1 || n.Availability != api.NodeAvailability_NODE_AVAILABILITY_DRAIN ||
		d.GetState() != api.DrainState_DRAIN_STATE_DRAINING || !d.Remove || !d.Force ||
		d.ReplacementTimeout.AsDuration() != api.DefaultDrainTimeout {
		t.Fatalf("w1 with replicas: node %v, removed %v; want a forced removing drain with the default timeout and no removal yet", n, rm.removed)
	}
}

func TestRemoveLastManagerWithReplicasRefusedBeforeDraining(t *testing.T) {
	st := storetest.New(t)
	storetest.Create(t, st,
		&api.Node{Id: "m1", Hostname: "m1", Role: api.NodeRole_NODE_ROLE_MANAGER, RaftId: 1},
		&api.Service{Id: "web", Spec: &api.ServiceSpec{Name: "web", Replicas: 1}},
		&api.Task{Id: "t", ServiceId: "web", Slot: 1, NodeId: "m1", DesiredState: api.TaskState_TASK_STATE_RUNNING,
			Status: &api.TaskStatus{State: api.TaskState_TASK_STATE_RUNNING}},
	)
	s := New(st, WithNodeRemover(&recordingRemover{}))
	if _, err := s.RemoveNode(context.Background(), &api.RemoveNodeRequest{Node: "m1"}); reason.Of(err) != reason.InvalidSpec {
		t.Fatalf("remove the last manager: %v, want invalid_spec", err)
	}
	if n := getNode(st, "m1"); n.Drain != nil || n.Availability != api.NodeAvailability_NODE_AVAILABILITY_ACTIVE {
		t.Fatalf("refused removal started a drain: %v", n)
	}
}
