package formation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/ipam"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/ca/token"
	"github.com/jaco-project/jaco/manager"
)

// initTimeout bounds how long Init waits for the new member to elect
// itself and apply the ClusterInit entry.
const initTimeout = 30 * time.Second

// Init makes this uninitialized daemon the first manager of a new cluster
// (ClusterService.Init, docs/design.md §4 "Init"). Files are written
// before the raft state, and the raft state appears atomically, so a
// crash part-way leaves the node uninitialized and init can run again.
func (f *Former) Init(ctx context.Context, req *api.InitClusterRequest) (*api.InitClusterResponse, error) {
	unlock, err := f.d.LockInit()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if f.initialized() {
		return nil, reason.Error(codes.FailedPrecondition, reason.AlreadyInitialized, "this node is already part of cluster %s", f.d.ClusterID())
	}
	// The pool is written down as chosen, default included, so a later
	// default never moves a cluster's networks.
	pool := ipam.DefaultPool
	if req.GetOverlayPool() != "" {
		p, err := ipam.ParsePool(req.GetOverlayPool())
		if err != nil {
			return nil, reason.Error(codes.InvalidArgument, reason.InvalidSpec, "%v", err)
		}
		pool = p
	}
	clusterID := uuid.NewString()
	nodeID, err := identity.NewNodeID()
	if err != nil {
		return nil, internalError(err)
	}
	raftID, err := manager.NewRaftID()
	if err != nil {
		return nil, internalError(err)
	}
	caCert, caKey, err := ca.NewRootCA(clusterID)
	if err != nil {
		return nil, internalError(err)
	}
	signer, err := ca.NewSigner(caCert, caKey)
	if err != nil {
		return nil, internalError(err)
	}
	certPEM, keyPEM, err := signer.Issue(nodeID, ca.RoleManager, clusterID, f.cfg.CertLifetime)
	if err != nil {
		return nil, internalError(err)
	}
	fp, err := token.Fingerprint(caCert)
	if err != nil {
		return nil, internalError(err)
	}
	tok, err := token.New(fp)
	if err != nil {
		return nil, internalError(err)
	}
	if err := f.keys.SaveNodeFiles(caCert, certPEM, keyPEM); err != nil {
		return nil, internalError(err)
	}
	sealer, err := f.keys.NewDataKey()
	if err != nil {
		return nil, internalError(err)
	}

	advertise := f.d.AdvertiseAddr()
	now := timestamppb.Now()
	meta := func() *api.Meta { return &api.Meta{CreatedAt: now, UpdatedAt: now} }
	first := &api.InternalRaftRequest{Actions: []*api.StoreAction{
		{Kind: api.StoreAction_KIND_CREATE, Target: &api.StoreAction_Cluster{Cluster: &api.Cluster{
			Id: clusterID, Meta: meta(), CaCertPem: caCert, CaKeyPem: caKey, OperatorTokenHash: tok.Hash(),
			OverlayPool: pool.String(),
		}}},
		{Kind: api.StoreAction_KIND_CREATE, Target: &api.StoreAction_Node{Node: &api.Node{
			Id: nodeID, Meta: meta(), Hostname: f.cfg.NodeName, Address: advertise,
			Role: api.NodeRole_NODE_ROLE_MANAGER, RaftId: raftID,
		}}},
	}}
	self := &api.RaftMember{RaftId: raftID, NodeId: nodeID, Address: advertise}
	if err := manager.Bootstrap(f.cfg.Dir.Raft(), sealer, clusterID, self, first); err != nil {
		return nil, internalError(err)
	}
	if err := f.parts.StartManager(); err != nil {
		return nil, internalError(err)
	}
	if err := f.parts.ReloadTLS(); err != nil {
		return nil, internalError(err)
	}
	wctx, cancel := context.WithTimeout(ctx, initTimeout)
	defer cancel()
	m := f.d.Manager()
	if m == nil {
		return nil, internalError(errors.New("the new cluster's manager stopped as it started"))
	}
	if err := m.WaitReady(wctx); err != nil {
		return nil, internalError(fmt.Errorf("wait for the new cluster to elect its leader: %w", err))
	}
	if err := f.parts.StartAgent(); err != nil {
		return nil, internalError(err)
	}
	f.log.Info("cluster initialized", "cluster_id", clusterID, "node_id", nodeID, "raft_id", fmt.Sprintf("%x", raftID))
	return &api.InitClusterResponse{ClusterId: clusterID, NodeId: nodeID, OperatorToken: tok.String()}, nil
}
