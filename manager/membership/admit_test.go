package membership

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

// fakeRaft records membership changes.
type fakeRaft struct {
	mu      sync.Mutex
	members []*api.RaftMember
	calls   []string
	// onAdd runs at the start of each AddLearner, unlocked (another join
	// racing this one); addErr, when set, fails AddLearner after it.
	onAdd  func()
	addErr error
}

func (f *fakeRaft) RaftID() uint64 { return 1 }
func (f *fakeRaft) AddLearner(_ context.Context, m *api.RaftMember) error {
	f.mu.Lock()
	onAdd := f.onAdd
	f.mu.Unlock()
	if onAdd != nil {
		onAdd()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.addErr != nil {
		return f.addErr
	}
	f.calls = append(f.calls, "add "+m.Address)
	f.members = append(f.members, m)
	return nil
}
func (f *fakeRaft) UpdateMember(_ context.Context, m *api.RaftMember) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "update "+m.Address)
	for i, old := range f.members {
		if old.RaftId == m.RaftId {
			f.members[i] = m
		}
	}
	return nil
}
func (f *fakeRaft) Members() []*api.RaftMember {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.members)
}
func (f *fakeRaft) IsRemoved(uint64) bool { return false }
func (f *fakeRaft) RemoveMember(_ context.Context, id uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.members = slices.DeleteFunc(f.members, func(m *api.RaftMember) bool {
		if m.RaftId == id {
			f.calls = append(f.calls, "remove "+m.Address)
			return true
		}
		return false
	})
	return nil
}
func (f *fakeRaft) HandOver(context.Context) (uint64, error) { return 0, nil }

// admitServer is a leader with a cluster and one manager, m1 at a:7000.
func admitServer(t *testing.T) (*Server, *fakeRaft, *store.Store) {
	t.Helper()
	st := storetest.New(t)
	caCert, caKey, err := ca.NewRootCA("c1")
	if err != nil {
		t.Fatal(err)
	}
	storetest.Create(t, st,
		&api.Cluster{Id: "c1", Meta: &api.Meta{}, CaCertPem: caCert, CaKeyPem: caKey},
		&api.Node{Id: "n2", Meta: &api.Meta{}, Hostname: "jaco-2", Address: "a:7000", Role: api.NodeRole_NODE_ROLE_MANAGER, RaftId: 2},
	)
	r := &fakeRaft{members: []*api.RaftMember{{RaftId: 1, NodeId: "n1", Address: "l:7000"}, {RaftId: 2, NodeId: "n2", Address: "a:7000"}}}
	return New(st, r, slog.New(slog.DiscardHandler)), r, st
}

var asManager = identity.NewContext(context.Background(), identity.Identity{Kind: identity.Node, NodeID: "n1", Role: ca.RoleManager})

func csr(t *testing.T) []byte {
	t.Helper()
	_, c, err := ca.NewNodeKey("joining-node")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func node(st *store.Store, hostname string) *api.Node {
	var n *api.Node
	st.View(func(tx store.ReadTx) { n = tx.FindNodeByHostname(hostname) })
	return n
}

func TestAdmitOnlyForManagers(t *testing.T) {
	s, r, _ := admitServer(t)
	for _, id := range []identity.Identity{{Kind: identity.Anonymous}, {Kind: identity.Operator}, {Kind: identity.Node, NodeID: "w", Role: ca.RoleWorker}} {
		_, err := s.Admit(identity.NewContext(context.Background(), id), &api.AdmitRequest{Hostname: "x-1", Address: "b:7000", CsrPem: csr(t)})
		if reason.Of(err) != reason.PermissionDenied {
			t.Errorf("Admit as %v: %v, want permission_denied", id, err)
		}
	}
	if len(r.calls) != 0 {
		t.Fatalf("refused admissions changed raft: %v", r.calls)
	}
}

func TestAdmitNewName(t *testing.T) {
	s, r, st := admitServer(t)
	resp, err := s.Admit(asManager, &api.AdmitRequest{Hostname: "jaco-3", Address: "b:7000", CsrPem: csr(t)})
	if err != nil {
		t.Fatal(err)
	}
	n := node(st, "jaco-3")
	if n == nil || n.Id != resp.NodeId || n.RaftId != resp.RaftId || n.Role != api.NodeRole_NODE_ROLE_MANAGER || len(resp.CertPem) == 0 {
		t.Fatalf("admitted %v, node %v", resp, n)
	}
	if !slices.Equal(r.calls, []string{"add b:7000"}) {
		t.Fatalf("raft calls %v", r.calls)
	}
}

func TestAdmitSameNodeRewritesAddress(t *testing.T) {
	s, r, st := admitServer(t)
	resp, err := s.Admit(asManager, &api.AdmitRequest{Hostname: "jaco-2", Address: "moved:7000", NodeId: "n2"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.NodeId != "n2" || resp.RaftId != 2 || len(resp.CertPem) != 0 {
		t.Fatalf("answer %v", resp)
	}
	if !slices.Equal(r.calls, []string{"update moved:7000"}) || len(r.Members()) != 2 {
		t.Fatalf("raft calls %v, members %v; want one update and still two members", r.calls, r.Members())
	}
	if n := node(st, "jaco-2"); n.Address != "moved:7000" || n.Id != "n2" {
		t.Fatalf("node after the rewrite: %v", n)
	}
	// Again, unchanged: nothing to do.
	if _, err := s.Admit(asManager, &api.AdmitRequest{Hostname: "jaco-2", Address: "moved:7000", NodeId: "n2"}); err != nil || len(r.calls) != 1 {
		t.Fatalf("repeat: %v, calls %v", err, r.calls)
	}
}

func TestAdmitUnknownNodeIDIsRemoved(t *testing.T) {
	s, r, _ := admitServer(t)
	_, err := s.Admit(asManager, &api.AdmitRequest{Hostname: "jaco-2", Address: "a:7000", NodeId: "gone"})
	if reason.Of(err) != reason.NodeRemoved || len(r.calls) != 0 {
		t.Fatalf("unknown node id: %v, calls %v; want node_removed and no change", err, r.calls)
	}
}

func TestAdmitTakesOverTheNameOfALostMember(t *testing.T) {
	s, r, st := admitServer(t)
	resp, err := s.Admit(asManager, &api.AdmitRequest{Hostname: "jaco-2", Address: "c:7000", CsrPem: csr(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.calls, []string{"remove a:7000", "add c:7000"}) {
		t.Fatalf("raft calls %v, want the old member removed, then the new one added", r.calls)
	}
	if n := node(st, "jaco-2"); n == nil || n.Id == "n2" || n.Id != resp.NodeId {
		t.Fatalf("node jaco-2 is %v, want the newcomer %s", n, resp.NodeId)
	}
}

// A joiner taking over a name must present a valid certificate request
// before the name's holder is removed: a refused admission changes
// nothing.
func TestAdmitWithABadRequestKeepsTheNamesHolder(t *testing.T) {
	s, r, st := admitServer(t)
	_, err := s.Admit(asManager, &api.AdmitRequest{Hostname: "jaco-2", Address: "c:7000", CsrPem: []byte("garbage")})
	if reason.Of(err) != reason.InvalidSpec {
		t.Fatalf("admission with a garbage request: %v, want invalid_spec", err)
	}
	if len(r.calls) != 0 {
		t.Fatalf("raft calls %v, want none", r.calls)
	}
	if n := node(st, "jaco-2"); n == nil || n.Id != "n2" {
		t.Fatalf("node jaco-2 is %v, want n2 still", n)
	}
}
