package roles

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/internal/connpool"
)

// fakeDaemon records what the poller asks of the daemon, in order.
type fakeDaemon struct {
	advertise string
	mgr       *fakeManager
	calls     []string
}

func (d *fakeDaemon) State() api.NodeState  { return api.NodeState_NODE_STATE_READY }
func (d *fakeDaemon) AdvertiseAddr() string { return d.advertise }
func (d *fakeDaemon) Manager() Manager {
	if d.mgr == nil {
		return nil
	}
	return d.mgr
}
func (d *fakeDaemon) AgentManagers() []string { return nil }
func (d *fakeDaemon) LockInit() (func(), error) {
	d.calls = append(d.calls, "lock")
	return func() { d.calls = append(d.calls, "unlock") }, nil
}
func (d *fakeDaemon) StartManager() error { d.calls = append(d.calls, "start manager"); return nil }
func (d *fakeDaemon) StopManager() error  { d.calls = append(d.calls, "stop manager"); return nil }
func (d *fakeDaemon) LoadNodeFiles() (caPEM, certPEM, keyPEM []byte, err error) {
	return nil, nil, nil, nil
}
func (d *fakeDaemon) InstallNodeFiles(_, _, _ []byte) error {
	d.calls = append(d.calls, "install files")
	return nil
}
func (d *fakeDaemon) ForgetUnlockKey() { d.calls = append(d.calls, "forget unlock key") }
func (d *fakeDaemon) WriteRaftState(string, string, uint64, []*api.RaftMember) error {
	d.calls = append(d.calls, "write raft state")
	return nil
}
func (d *fakeDaemon) SaveOperatorToken(string) error { return nil }

type fakeManager struct {
	raftID  uint64
	members []*api.RaftMember
}

func (m *fakeManager) NodeID() string                 { return "n1" }
func (m *fakeManager) RaftID() uint64                 { return m.raftID }
func (m *fakeManager) RaftMembers() []*api.RaftMember { return m.members }
func (m *fakeManager) Node(string) *api.Node          { return nil }
func (m *fakeManager) Replayed() bool                 { return true }

func newTestPoller(t *testing.T, d *fakeDaemon) *Poller {
	t.Helper()
	pool := connpool.New(func(string) (*grpc.ClientConn, error) { t.Fatal("no dial expected"); return nil, nil })
	return New(Config{ManagersFile: filepath.Join(t.TempDir(), "managers.json"), Interval: 1,
		Daemon: d, Files: d, Conns: pool})
}

// TestRoleChangeOrder: a promotion writes the raft state before it saves
// the manager certificate and starts the manager after; a demotion
// forgets the unlock key before it saves the worker certificate (in
// clear) and stops the manager after. Each under the init lock. A crash
// between any two steps leaves a node that restarts and renews to the
// right certificate.
func TestRoleChangeOrder(t *testing.T) {
	resp := &api.RenewCertificateResponse{RaftId: 7}
	for _, c := range []struct {
		name string
		mgr  *fakeManager
		role string
		want []string
	}{
		{"promotion", nil, ca.RoleManager, []string{"lock", "write raft state", "install files", "start manager", "unlock"}},
		{"demotion", &fakeManager{raftID: 7}, ca.RoleWorker, []string{"lock", "forget unlock key", "install files", "stop manager", "unlock"}},
		{"renewal", nil, ca.RoleWorker, []string{"lock", "install files", "unlock"}},
	} {
		d := &fakeDaemon{mgr: c.mgr}
		p := newTestPoller(t, d)
		id := ca.NodeIdentity{NodeID: "n1", ClusterID: "c1", Role: c.role}
		if err := p.installCert(context.Background(), resp, nil, id, time.Time{}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(d.calls, c.want) {
			t.Errorf("%s: %q, want %q", c.name, d.calls, c.want)
		}
	}
}

// TestRenewTargetsOthersFirst: a manager asks the other members first,
// by raft id (its own record may hold an old address), then the saved
// managers it has not named, then itself; a worker never itself.
func TestRenewTargetsOthersFirst(t *testing.T) {
	d := &fakeDaemon{advertise: "self:7000", mgr: &fakeManager{raftID: 1, members: []*api.RaftMember{
		{RaftId: 1, Address: "old-self:7000"}, {RaftId: 2, Address: "b:7000"}, {RaftId: 3, Address: "c:7000"},
	}}}
	p := newTestPoller(t, d)
	if err := SaveManagers(p.cfg.ManagersFile, []string{"c:7000", "self:7000", "d:7000"}); err != nil {
		t.Fatal(err)
	}
	if got, want := p.renewTargets(), []string{"b:7000", "c:7000", "d:7000", "self:7000"}; !slices.Equal(got, want) {
		t.Errorf("manager asks %q, want %q", got, want)
	}
	d.mgr = nil
	if got, want := p.renewTargets(), []string{"c:7000", "d:7000"}; !slices.Equal(got, want) {
		t.Errorf("worker asks %q, want %q", got, want)
	}
}

// TestNoManagersFile: a node that never saved the managers' addresses
// has none, and that is no error.
func TestNoManagersFile(t *testing.T) {
	addrs, err := LoadManagers(filepath.Join(t.TempDir(), "managers.json"))
	if err != nil || addrs != nil {
		t.Fatalf("LoadManagers of no file = %q, %v; want nil, nil", addrs, err)
	}
}
