// Package restore turns a backup into the data dir of a stopped, empty
// node that starts as the sole manager of the backed-up cluster: it
// writes the node's certificate, a data key and raft state, offline.
package restore

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/nodename"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/internal/datadir"
	"github.com/jaco-project/jaco/manager/backup/backupfile"
	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/manager/state/raft"
)

// ErrNotEmpty is returned by Restore for a data dir that holds anything.
var ErrNotEmpty = errors.New("data dir is not empty")

// Options say where and as whom a backup is restored.
type Options struct {
	// DataDir is the stopped node's data dir; it must be empty or absent.
	DataDir string
	// NodeName is this node's hostname in the cluster. A node of that name
	// in the backup becomes this node (keeping its id, labels and
	// availability); otherwise a new Node is added.
	NodeName string
	// AdvertiseAddr is the host:port other nodes will dial.
	AdvertiseAddr string
	// CertLifetime of this node's certificate; ca.DefaultCertTTL if zero.
	CertLifetime time.Duration
}

// Restored describes the member Restore wrote.
type Restored struct {
	ClusterID string
	NodeID    string
	RaftID    uint64
	// Index and Term are the backup's; the member starts its log there.
	Index, Term uint64
	// Blacklisted are the raft ids of the old cluster, refused from now on.
	Blacklisted []uint64
}

// Restore writes b into opts.DataDir as the state of the sole manager of
// b's cluster: the store as backed up, with this node a manager under a
// fresh raft id at opts.AdvertiseAddr; a certificate for it signed by the
// cluster CA in the backup; a fresh data key; and a raft log starting at
// the backup's index and term whose only voter is this node. Every member
// of the old cluster is blacklisted. On error the data dir is left as it
// was found (empty).
func Restore(b *backupfile.Backup, opts Options) (_ *Restored, err error) {
	if opts.DataDir == "" || opts.NodeName == "" || opts.AdvertiseAddr == "" {
		return nil, errors.New("restore: a data dir, a node name and an advertise address are required")
	}
	// jacod refuses to start under a name that is not a host name; a
	// restore must not make a data dir only such a name would open.
	if err := nodename.Check(opts.NodeName); err != nil {
		return nil, fmt.Errorf("restore: --node-name: %w", err)
	}
	if opts.CertLifetime == 0 {
		opts.CertLifetime = ca.DefaultCertTTL
	}
	if err := checkEmpty(opts.DataDir); err != nil {
		return nil, err
	}
	plan, err := planRestore(b, opts)
	if err != nil {
		return nil, err
	}

	created, err := ensureDir(opts.DataDir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			cleanup(opts.DataDir, created)
		}
	}()
	if err := ca.SaveNodeFiles(datadir.Dir(opts.DataDir).Node(), plan.caCert, plan.certPEM, plan.keyPEM); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	if err := encryption.WriteKeyFile(datadir.Dir(opts.DataDir).DataKeys(), encryption.DataKeys{Current: plan.dek}, nil); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	sealer, err := encryption.NewSealer(plan.dek)
	if err != nil {
		return nil, err
	}
	if err := raft.WriteRestored(datadir.Dir(opts.DataDir).Raft(), sealer, b.ClusterID, plan.self, b.Term, b.Index, plan.snap); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	return &Restored{
		ClusterID: b.ClusterID, NodeID: plan.self.NodeId, RaftID: plan.self.RaftId,
		Index: b.Index, Term: b.Term, Blacklisted: plan.blacklisted,
	}, nil
}

// checkEmpty refuses a data dir with anything in it: restoring over a
// node's state would mix two histories.
func checkEmpty(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("restore: read data dir: %w", err)
	case len(entries) > 0:
		return fmt.Errorf("%w: %s holds %s; restore only into an empty data dir of a stopped node", ErrNotEmpty, dir, entries[0].Name())
	}
	return nil
}

func ensureDir(dir string) (created bool, err error) {
	if _, err := os.Stat(dir); err == nil {
		return false, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("restore: create data dir: %w", err)
	}
	return true, nil
}

// cleanup empties a data dir Restore found empty.
func cleanup(dir string, created bool) {
	if created {
		_ = os.RemoveAll(dir)
		return
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// plan is everything Restore writes, computed before it writes anything.
type plan struct {
	self                    *api.RaftMember
	snap                    *api.RaftSnapshot
	blacklisted             []uint64
	caCert, certPEM, keyPEM []byte
	dek                     encryption.Key
}

func planRestore(b *backupfile.Backup, opts Options) (*plan, error) {
	cluster, err := b.Cluster()
	if err != nil {
		return nil, err
	}
	snap := proto.Clone(b.Snapshot).(*api.RaftSnapshot)
	// Every member of the old cluster, current or removed, is removed now.
	removed := append(slices.Clone(snap.Members), snap.RemovedMembers...)
	slices.SortFunc(removed, func(a, b *api.RaftMember) int { return cmp.Compare(a.RaftId, b.RaftId) })
	raftID, err := freshRaftID(removed)
	if err != nil {
		return nil, err
	}
	self, err := makeSelf(snap.Store, opts, raftID, b.Index)
	if err != nil {
		return nil, err
	}
	p := &plan{
		self: &api.RaftMember{RaftId: raftID, NodeId: self.Id, Address: opts.AdvertiseAddr},
		snap: snap,
	}
	for _, m := range removed {
		p.blacklisted = append(p.blacklisted, m.RaftId)
	}
	snap.Members = []*api.RaftMember{p.self}
	snap.RemovedMembers = removed

	signer, err := ca.NewSigner(cluster.CaCertPem, cluster.CaKeyPem)
	if err != nil {
		return nil, fmt.Errorf("restore: cluster CA from the backup: %w", err)
	}
	certPEM, keyPEM, err := signer.Issue(self.Id, ca.RoleManager, b.ClusterID, opts.CertLifetime)
	if err != nil {
		return nil, fmt.Errorf("restore: sign this node's certificate: %w", err)
	}
	p.caCert, p.certPEM, p.keyPEM = cluster.CaCertPem, certPEM, keyPEM
	if p.dek, err = encryption.NewKey(); err != nil {
		return nil, err
	}
	return p, nil
}

// freshRaftID draws a raft id the old cluster never used.
func freshRaftID(old []*api.RaftMember) (uint64, error) {
	return raft.UnusedRaftID(raft.NewRaftID, func(id uint64) bool {
		return slices.ContainsFunc(old, func(m *api.RaftMember) bool { return m.RaftId == id })
	})
}

// makeSelf makes this node, in st, a manager with raftID at the advertise
// address: the node named opts.NodeName if the backup has one, else a new
// node. Its version becomes the backup's index, the write that made it so.
func makeSelf(st *api.StoreSnapshot, opts Options, raftID, index uint64) (*api.Node, error) {
	now := timestamppb.Now()
	for _, n := range st.Nodes {
		if n.Hostname != opts.NodeName {
			continue
		}
		n.Role, n.DesiredRole, n.RaftId, n.Address = api.NodeRole_NODE_ROLE_MANAGER, api.NodeRole_NODE_ROLE_UNSPECIFIED, raftID, opts.AdvertiseAddr
		if n.Meta == nil {
			n.Meta = &api.Meta{CreatedAt: now}
		}
		n.Meta.Version, n.Meta.UpdatedAt = index, now
		return n, nil
	}
	id, err := identity.NewNodeID()
	if err != nil {
		return nil, err
	}
	n := &api.Node{
		Id: id, Meta: &api.Meta{Version: index, CreatedAt: now, UpdatedAt: now},
		Hostname: opts.NodeName, Address: opts.AdvertiseAddr,
		Role: api.NodeRole_NODE_ROLE_MANAGER, RaftId: raftID,
	}
	st.Nodes = append(st.Nodes, n)
	slices.SortFunc(st.Nodes, func(a, b *api.Node) int { return cmp.Compare(a.Id, b.Id) })
	return n, nil
}
