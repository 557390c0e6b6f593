package node

import (
	"context"
	"encoding/binary"
	"errors"
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

// ErrInitialClusterWithState refuses --initial-cluster on a node that
// already has raft state: the configuration is for forming only, and the
// state, not the flag, says who the members are now.
var ErrInitialClusterWithState = errors.New("this node already has raft state; --initial-cluster is only for forming a new cluster: remove the flag to restart it")

// derivedMember is one member of a static cluster, as every node derives it.
type derivedMember struct {
	name, addr, nodeID string
	raftID             uint64
}

// deriveStatic derives the cluster and its members from the secret and the
// canonical configuration.
func deriveStatic(secret *ca.JoinSecret, members []staticMember) (*ca.DerivedCluster, []derivedMember, error) {
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

// runStaticFormation waits the formation delay, then forms.
func (n *Node) runStaticFormation(ctx context.Context) {
	n.log.Info("static formation: initializing after the formation delay", "delay", n.cfg.FormationDelay,
		"initial_cluster", canonicalInitialCluster(n.cfg.formation.static))
	select {
	case <-ctx.Done():
		return
	case <-time.After(n.cfg.FormationDelay):
	}
	if err := n.formStatic(); err != nil {
		select {
		case n.fatal <- fmt.Errorf("static formation: %w", err):
		default:
		}
	}
}

// formStatic writes this member's raft state and starts it.
func (n *Node) formStatic() error {
	unlock, err := n.lockInit()
	if err != nil {
		return err
	}
	defer unlock()
	if n.initialized() {
		return nil
	}
	cluster, members, err := deriveStatic(n.cfg.formation.secret, n.cfg.formation.static)
	if err != nil {
		return err
	}
	// checkFormation made sure the list names this node, and
	// startFormation that it gives this node its advertise address.
	self := &members[slices.IndexFunc(members, func(m derivedMember) bool { return m.name == n.cfg.NodeName })]
	signer, err := ca.NewSigner(cluster.CACertPEM, cluster.CAKeyPEM)
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := signer.Issue(self.nodeID, ca.RoleManager, cluster.ClusterID, n.cfg.CertLifetime)
	if err != nil {
		return err
	}
	if err := n.keys.SaveNodeFiles(cluster.CACertPEM, certPEM, keyPEM); err != nil {
		return err
	}
	sealer, err := n.keys.NewDataKey()
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
	if err := manager.BootstrapStatic(n.cfg.raftDir(), sealer, cluster.ClusterID, selfMember, raftMembers, first); err != nil {
		return err
	}
	if err := n.startManager(); err != nil {
		return err
	}
	if err := n.reloadTLS(); err != nil {
		return err
	}
	if err := n.startAgent(); err != nil {
		return err
	}
	n.log.Info("static formation: raft state written, every member a voter", "cluster_id", cluster.ClusterID,
		"node_id", self.nodeID, "raft_id", fmt.Sprintf("%x", self.raftID), "members", len(members))
	return n.saveOperatorToken(cluster.OperatorToken.String())
}

// checkStaticState refuses --initial-cluster on a data dir with raft
// state, before anything in it is touched.
func (c *Config) checkStaticState() error {
	if c.InitialCluster != "" && manager.StateExists(c.raftDir()) {
		return ErrInitialClusterWithState
	}
	return nil
}
