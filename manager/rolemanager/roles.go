package rolemanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"go.etcd.io/raft/v3"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
	jraft "github.com/jaco-project/jaco/manager/state/raft"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/voterset"
)

// RoleRaft is the leader's raft member as the role reconciler needs it
// (implemented by *raft.Node in manager/state/raft).
type RoleRaft interface {
	RaftID() uint64
	Status() raft.Status
	Members() []*api.RaftMember
	IsRemoved(raftID uint64) bool
	// AddLearner adds a nonvoter and returns once that is applied.
	AddLearner(ctx context.Context, m *api.RaftMember) error
}

// Membership is the voter-safe removal and leadership handover
// (implemented by *VoterReconciler).
type Membership interface {
	RemoveMember(ctx context.Context, raftID uint64) error
	HandOver(ctx context.Context) (uint64, error)
}

// RoleConfig configures a RoleReconciler. Zero values take defaults.
type RoleConfig struct {
	Store   *store.Store
	Raft    RoleRaft
	Members Membership
	// NewRaftID draws a random raft id (default raft.NewRaftID); the
	// reconciler skips ids in use or removed.
	NewRaftID func() (uint64, error)
	Interval  time.Duration // between passes; DefaultInterval
	Logger    *slog.Logger
}

// RoleReconciler moves each node's role to its desired role
// (docs/design.md §4, "Roles"), on the leader, one node at a time:
//
//   - Promotion: the worker joins raft as a nonvoter at its address, with
//     a fresh raft id; then Node.role becomes manager and Node.raft_id is
//     set. The node learns it when it next asks (RenewCertificate) and
//     starts its raft member; the VoterReconciler decides its suffrage.
//   - Demotion: the manager leaves raft by RemoveMember's voter-safe path
//     (its raft id is never used again); only then does Node.role become
//     worker, so the certificate the node gets next is a worker's and a
//     demoted node never holds a fresh manager certificate outside the
//     group. When the node to demote is this leader, leadership is handed
//     over first and the new leader's reconciler finishes the demotion.
//
// The operator's request is checked when it is made
// (voterset.CheckDemotion); a pass also re-checks it and leaves a demotion
// that became unsafe pending, logged, until it is safe again or the
// operator changes it.
type RoleReconciler struct {
	cfg RoleConfig
	log *slog.Logger
}

// NewRoleReconciler returns a reconciler; Run drives it.
func NewRoleReconciler(cfg RoleConfig) *RoleReconciler {
	cfg.Interval = cmpOr(cfg.Interval, DefaultInterval)
	if cfg.NewRaftID == nil {
		cfg.NewRaftID = jraft.NewRaftID
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &RoleReconciler{cfg: cfg, log: log}
}

// Run reconciles every Interval until ctx ends (the leader runner cancels
// it when leadership is lost). Errors are logged and retried.
func (r *RoleReconciler) Run(ctx context.Context) {
	every(ctx, r.cfg.Interval, func() {
		if err := r.Pass(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("role reconciliation failed; retrying", "err", err)
		}
	})
}

// Pass reconciles every node whose role differs from its desired role,
// in node id order, and returns the first error (the others are still
// tried). It does nothing unless this member leads.
func (r *RoleReconciler) Pass(ctx context.Context) error {
	if st := r.cfg.Raft.Status(); st.Lead == raft.None || st.Lead != r.cfg.Raft.RaftID() {
		return nil
	}
	var pending, all []*api.Node
	r.cfg.Store.View(func(tx store.ReadTx) {
		all = tx.ListNodes() // ordered by id
		for _, n := range all {
			if n.DesiredRole != api.NodeRole_NODE_ROLE_UNSPECIFIED && n.DesiredRole != n.Role {
				pending = append(pending, n)
			}
		}
	})
	var errs []error
	for _, n := range pending {
		var err error
		switch n.DesiredRole {
		case api.NodeRole_NODE_ROLE_MANAGER:
			err = r.promote(ctx, n)
		case api.NodeRole_NODE_ROLE_WORKER:
			err = r.demote(ctx, n, all)
		}
		if errors.Is(err, errHandedOver) {
			return nil // no longer the leader: the new one carries on
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.Hostname, err))
		}
	}
	return errors.Join(errs...)
}

var errHandedOver = errors.New("leadership handed over")

func (r *RoleReconciler) promote(ctx context.Context, n *api.Node) error {
	raftID := memberRaftID(r.cfg.Raft.Members(), n.Id)
	if raftID == 0 {
		id, err := r.newRaftID()
		if err != nil {
			return err
		}
		m := &api.RaftMember{RaftId: id, NodeId: n.Id, Address: n.Address}
		if err := r.cfg.Raft.AddLearner(ctx, m); err != nil {
			return fmt.Errorf("add as nonvoter: %w", err)
		}
		raftID = id
		r.log.Info("promotion: joined raft as a nonvoter", "node_id", n.Id, "hostname", n.Hostname,
			"raft_id", fmt.Sprintf("%x", id), "address", n.Address)
	}
	return r.setRole(ctx, n.Id, api.NodeRole_NODE_ROLE_MANAGER, raftID)
}

func (r *RoleReconciler) demote(ctx context.Context, n *api.Node, all []*api.Node) error {
	inRaft := n.RaftId != 0 && memberRaftID(r.cfg.Raft.Members(), n.Id) == n.RaftId
	if inRaft {
		if err := voterset.CheckDemotion(all, n); err != nil {
			return fmt.Errorf("demotion waits: %w", err)
		}
		if n.RaftId == r.cfg.Raft.RaftID() {
			to, err := r.cfg.Members.HandOver(ctx)
			if err != nil {
				return fmt.Errorf("hand leadership over before the demotion: %w", err)
			}
			r.log.Info("demotion of the leader: leadership handed over; the new leader finishes it",
				"node_id", n.Id, "to", fmt.Sprintf("%x", to))
			return errHandedOver
		}
		err := r.cfg.Members.RemoveMember(ctx, n.RaftId)
		if err != nil && !errors.Is(err, voterset.ErrNoSuchMember) {
			return fmt.Errorf("leave raft: %w", err)
		}
		r.log.Info("demotion: left raft", "node_id", n.Id, "hostname", n.Hostname, "raft_id", fmt.Sprintf("%x", n.RaftId))
	}
	return r.setRole(ctx, n.Id, api.NodeRole_NODE_ROLE_WORKER, 0)
}

// setRole records the role the cluster now holds for the node.
func (r *RoleReconciler) setRole(ctx context.Context, nodeID string, role api.NodeRole, raftID uint64) error {
	err := r.cfg.Store.Update(ctx, func(tx *store.Tx) error {
		n := tx.GetNode(nodeID)
		if n == nil {
			return nil // removed meanwhile
		}
		n.Role, n.RaftId = role, raftID
		return tx.Update(n)
	})
	if err != nil {
		return fmt.Errorf("record role %s: %w", enumword.Of(role), err)
	}
	r.log.Info("node role changed", "node_id", nodeID, "role", enumword.Of(role))
	return nil
}

func (r *RoleReconciler) newRaftID() (uint64, error) {
	members := r.cfg.Raft.Members()
	return jraft.UnusedRaftID(r.cfg.NewRaftID, func(id uint64) bool {
		return r.cfg.Raft.IsRemoved(id) || slices.ContainsFunc(members, func(m *api.RaftMember) bool { return m.RaftId == id })
	})
}

func memberRaftID(members []*api.RaftMember, nodeID string) uint64 {
	for _, m := range members {
		if m.NodeId == nodeID {
			return m.RaftId
		}
	}
	return 0
}
