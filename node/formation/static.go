package formation

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/manager"
)

// Static formation (docs/adr/0014-static-formation.md): every node is
// started with the same --initial-cluster and join secret. Each derives
// the same cluster — id, CA, member raft and node ids, the ClusterInit
// entry — and writes the same committed log with every member a voter,
// so they can all initialize at once, each on its own, and still form one
// cluster.

// derivedMember is one member of a static cluster, as every node derives it.
type derivedMember struct {
	name, addr, nodeID string
	raftID             uint64
}

// deriveStatic derives the cluster and its members from the secret and the
// canonical configuration.
func deriveStatic(secret *ca.JoinSecret, members []StaticMember) (*ca.DerivedCluster, []derivedMember, error) {
	conf := canonicalInitialCluster(members)
	cluster, err := ca.DeriveCluster(secret, conf)
	if err != nil {
		return nil, nil, err
	}
	out := make([]derivedMember, len(members))
	for i, m := range members {
		purpose := func(what string) string {
			return "jaco static member v1 " + what + "\x00" + conf + "\x00" + m.Name
		}
		raftID := binary.BigEndian.Uint64(secret.Derive(purpose("raft id"), 8))
		if raftID == 0 {
			raftID = 1 // one chance in 2^64; any fixed non-zero id will do
		}
		out[i] = derivedMember{
			name: m.Name, addr: m.Addr, raftID: raftID,
			nodeID: identity.NodeIDOf([16]byte(secret.Derive(purpose("node id"), 16))),
		}
	}
	for i := range out {
		for j := range i {
			if out[i].raftID == out[j].raftID || out[i].nodeID == out[j].nodeID {
				return nil, nil, fmt.Errorf("derived ids of %s and %s collide", out[i].name, out[j].name)
			}
		}
	}
	return cluster, out, nil
}

// runStatic waits the formation delay, then forms; a failure stops the
// daemon.
func (f *Former) runStatic(ctx context.Context) {
	s := f.cfg.Settings
	f.log.Info("static formation: initializing after the formation delay", "delay", s.Delay,
		"initial_cluster", canonicalInitialCluster(s.Static))
	select {
	case <-ctx.Done():
		return
	case <-time.After(s.Delay):
	}
	if err := f.formStatic(); err != nil {
		f.d.Fail(fmt.Errorf("static formation: %w", err))
	}
}

// formStatic writes this member's raft state and starts it.
func (f *Former) formStatic() error {
	unlock, err := f.d.LockInit()
	if err != nil {
		return err
	}
	defer unlock()
	if f.initialized() {
		return nil
	}
	cluster, members, err := deriveStatic(f.cfg.Settings.Secret, f.cfg.Settings.Static)
	if err != nil {
		return err
	}
	// Parse made sure the list names this node, and Start that it gives
	// this node its advertise address.
	self := &members[slices.IndexFunc(members, func(m derivedMember) bool { return m.name == f.cfg.NodeName })]
	signer, err := ca.NewSigner(cluster.CACertPEM, cluster.CAKeyPEM)
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := signer.Issue(self.nodeID, ca.RoleManager, cluster.ClusterID, f.cfg.CertLifetime)
	if err != nil {
		return err
	}
	if err := f.keys.SaveNodeFiles(cluster.CACertPEM, certPEM, keyPEM); err != nil {
		return err
	}
	sealer, err := f.keys.NewDataKey()
	if err != nil {
		return err
	}
	// The ClusterInit entry is committed on every member alike, so it
	// holds nothing a member could differ in: not even a clock reading.
	created := timestamppb.New(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	meta := func() *api.Meta { return &api.Meta{CreatedAt: created, UpdatedAt: created} }
	first := &api.InternalRaftRequest{Actions: []*api.StoreAction{
		{Kind: api.StoreAction_KIND_CREATE, Target: &api.StoreAction_Cluster{Cluster: &api.Cluster{
			Id: cluster.ClusterID, Meta: meta(), CaCertPem: cluster.CACertPEM, CaKeyPem: cluster.CAKeyPEM,
			OperatorTokenHash: cluster.OperatorToken.Hash(),
		}}},
	}}
	raftMembers := make([]*api.RaftMember, len(members))
	for i, m := range members {
		raftMembers[i] = &api.RaftMember{RaftId: m.raftID, NodeId: m.nodeID, Address: m.addr}
		first.Actions = append(first.Actions, &api.StoreAction{Kind: api.StoreAction_KIND_CREATE, Target: &api.StoreAction_Node{Node: &api.Node{
			Id: m.nodeID, Meta: meta(), Hostname: m.name, Address: m.addr, Role: api.NodeRole_NODE_ROLE_MANAGER, RaftId: m.raftID,
		}}})
	}
	selfMember := &api.RaftMember{RaftId: self.raftID, NodeId: self.nodeID, Address: self.addr}
	if err := manager.BootstrapStatic(f.cfg.Dir.Raft(), sealer, cluster.ClusterID, selfMember, raftMembers, first); err != nil {
		return err
	}
	if err := f.parts.StartManager(); err != nil {
		return err
	}
	if err := f.parts.ReloadTLS(); err != nil {
		return err
	}
	if err := f.parts.StartAgent(); err != nil {
		return err
	}
	f.log.Info("static formation: raft state written, every member a voter", "cluster_id", cluster.ClusterID,
		"node_id", self.nodeID, "raft_id", fmt.Sprintf("%x", self.raftID), "members", len(members))
	return f.SaveOperatorToken(cluster.OperatorToken.String())
}
