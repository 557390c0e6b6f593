package rolemanager

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"go.etcd.io/raft/v3"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
	"github.com/jaco-project/jaco/manager/voterset"
)

// roleFake is the leader's raft member and membership as the role
// reconciler sees them; changes apply at once and are recorded.
type roleFake struct {
	mu      sync.Mutex
	self    uint64
	lead    uint64
	members []*api.RaftMember
	removed map[uint64]bool
	calls   []string
	nextID  uint64
}

func (f *roleFake) RaftID() uint64 { return f.self }
func (f *roleFake) Status() raft.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return raft.Status{BasicStatus: raft.BasicStatus{SoftState: raft.SoftState{Lead: f.lead}}}
}
func (f *roleFake) Members() []*api.RaftMember {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.members)
}
func (f *roleFake) IsRemoved(id uint64) bool { f.mu.Lock(); defer f.mu.Unlock(); return f.removed[id] }
func (f *roleFake) AddLearner(_ context.Context, m *api.RaftMember) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "add "+m.NodeId+" "+m.Address)
	f.members = append(f.members, m)
	return nil
}
func (f *roleFake) RemoveMember(_ context.Context, id uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, m := range f.members {
		if m.RaftId == id {
			f.calls = append(f.calls, "remove "+m.NodeId)
			f.members = slices.Delete(f.members, i, i+1)
			f.removed[id] = true
			return nil
		}
	}
	return voterset.ErrNoSuchMember
}
func (f *roleFake) HandOver(context.Context) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "handover")
	f.lead = 0
	return 99, nil
}
func (f *roleFake) newRaftID() (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	return f.nextID, nil
}

func ready() *api.NodeStatus {
	return &api.NodeStatus{State: api.NodeStatusState_NODE_STATUS_STATE_READY}
}

func manager(id string, raftID uint64) *api.Node {
	return &api.Node{Id: id, Hostname: id, Address: id + ":7000", Role: api.NodeRole_NODE_ROLE_MANAGER, RaftId: raftID, Status: ready()}
}

func worker(id string) *api.Node {
	return &api.Node{Id: id, Hostname: id, Address: id + ":7000", Role: api.NodeRole_NODE_ROLE_WORKER, Status: ready()}
}

func desire(n *api.Node, role api.NodeRole) *api.Node { n.DesiredRole = role; return n }

// setup: m1 (raft id 1, the leader) and m2 (raft id 2) are managers.
func setup(t *testing.T, nodes ...*api.Node) (*store.Store, *roleFake, *RoleReconciler) {
	t.Helper()
	st := storetest.New(t)
	f := &roleFake{self: 1, lead: 1, removed: map[uint64]bool{}, nextID: 10,
		members: []*api.RaftMember{{RaftId: 1, NodeId: "m1"}, {RaftId: 2, NodeId: "m2"}}}
	objs := []store.Object{manager("m1", 1), manager("m2", 2)}
	for _, n := range nodes {
		objs = append(objs, n)
	}
	storetest.Create(t, st, objs...)
	r := NewRoleReconciler(RoleConfig{Store: st, Raft: f, Members: f, NewRaftID: f.newRaftID})
	return st, f, r
}

func getNode(st *store.Store, id string) (n *api.Node) {
	st.View(func(tx store.ReadTx) { n = proto.Clone(tx.GetNode(id)).(*api.Node) })
	return n
}

func TestPromotionJoinsRaftBeforeTheRoleChanges(t *testing.T) {
	st, f, r := setup(t, desire(worker("w1"), api.NodeRole_NODE_ROLE_MANAGER))
	if err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"add w1 w1:7000"}; !slices.Equal(f.calls, want) {
		t.Errorf("raft calls %q, want %q", f.calls, want)
	}
	n := getNode(st, "w1")
	if n.Role != api.NodeRole_NODE_ROLE_MANAGER || n.RaftId != 11 {
		t.Errorf("w1 role %v raft id %d, want manager with the raft id it joined with (11)", n.Role, n.RaftId)
	}
	// Done: a second pass changes nothing.
	if err := r.Pass(context.Background()); err != nil || len(f.calls) != 1 {
		t.Errorf("second pass: err %v, calls %q", err, f.calls)
	}
}

func TestPromotionResumesWithTheRaftIDAlreadyAdded(t *testing.T) {
	st, f, r := setup(t, desire(worker("w1"), api.NodeRole_NODE_ROLE_MANAGER))
	f.members = append(f.members, &api.RaftMember{RaftId: 7, NodeId: "w1"})
	if err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 0 {
		t.Errorf("raft calls %q, want none (w1 is already a member)", f.calls)
	}
	if n := getNode(st, "w1"); n.RaftId != 7 || n.Role != api.NodeRole_NODE_ROLE_MANAGER {
		t.Errorf("w1 role %v raft id %d, want manager 7", n.Role, n.RaftId)
	}
}

func TestPromotionSkipsRemovedRaftIDs(t *testing.T) {
	st, f, r := setup(t, desire(worker("w1"), api.NodeRole_NODE_ROLE_MANAGER))
	f.removed[11], f.removed[12] = true, true
	if err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := getNode(st, "w1"); n.RaftId != 13 {
		t.Errorf("w1 raft id %d, want 13 (11 and 12 were removed members' ids)", n.RaftId)
	}
}

func TestDemotionLeavesRaftBeforeTheRoleChanges(t *testing.T) {
	st, f, r := setup(t, manager("m3", 3))
	f.members = append(f.members, &api.RaftMember{RaftId: 3, NodeId: "m3"})
	updateNode(t, st, desire(getNode(st, "m2"), api.NodeRole_NODE_ROLE_WORKER))
	if err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"remove m2"}; !slices.Equal(f.calls, want) {
		t.Errorf("calls %q, want %q", f.calls, want)
	}
	if n := getNode(st, "m2"); n.Role != api.NodeRole_NODE_ROLE_WORKER || n.RaftId != 0 {
		t.Errorf("m2 role %v raft id %d, want worker with no raft id", n.Role, n.RaftId)
	}
}

func TestDemotingTheLeaderHandsOverFirst(t *testing.T) {
	st, f, r := setup(t)
	updateNode(t, st, desire(getNode(st, "m1"), api.NodeRole_NODE_ROLE_WORKER))
	if err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"handover"}; !slices.Equal(f.calls, want) {
		t.Errorf("calls %q, want %q", f.calls, want)
	}
	if n := getNode(st, "m1"); n.Role != api.NodeRole_NODE_ROLE_MANAGER {
		t.Errorf("m1 role %v: the leader's role changed before it left raft", n.Role)
	}
}

func TestDemotionThatBecameUnsafeWaits(t *testing.T) {
	st, f, r := setup(t)
	m1 := getNode(st, "m1")
	m1.Status = &api.NodeStatus{State: api.NodeStatusState_NODE_STATUS_STATE_DOWN}
	updateNode(t, st, m1)
	updateNode(t, st, desire(getNode(st, "m2"), api.NodeRole_NODE_ROLE_WORKER))
	err := r.Pass(context.Background())
	if !errors.Is(err, voterset.ErrDemoteCostsQuorum) {
		t.Errorf("pass: %v, want %v", err, voterset.ErrDemoteCostsQuorum)
	}
	if len(f.calls) != 0 {
		t.Errorf("calls %q, want none", f.calls)
	}
}

func TestNothingUnlessLeading(t *testing.T) {
	_, f, r := setup(t, desire(worker("w1"), api.NodeRole_NODE_ROLE_MANAGER))
	f.lead = 2
	if err := r.Pass(context.Background()); err != nil || len(f.calls) != 0 {
		t.Errorf("pass on a follower: err %v, calls %q", err, f.calls)
	}
}

func updateNode(t *testing.T, st *store.Store, n *api.Node) {
	t.Helper()
	if err := st.Update(context.Background(), func(tx *store.Tx) error { return tx.Update(n) }); err != nil {
		t.Fatalf("update %s: %v", n.Id, err)
	}
}
