package formation

import (
	"errors"
	"fmt"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/manager"
)

// ErrNothingToForce: --force-new-cluster on a node that holds no manager
// raft state.
var ErrNothingToForce = errors.New("--force-new-cluster: this data dir holds no manager raft state")

// ForceNewCluster rewrites this manager's raft state, before it opens, as
// a cluster with this manager its sole voter (--force-new-cluster,
// docs/adr/0011-force-new-cluster.md). It is for a majority lost for
// good: the other members are blacklisted and new managers join with
// tokens. Done once; the marker it leaves makes the flag harmless when
// left on. The daemon calls it at start, or at unlock when the data keys
// were sealed then, before anything else runs.
func (f *Former) ForceNewCluster() error {
	raftDir := f.cfg.Dir.Raft()
	if !manager.HasStateToForce(raftDir) {
		return ErrNothingToForce
	}
	sealer, err := f.keys.DataSealer()
	if err != nil {
		return fmt.Errorf("force new cluster: %w", err)
	}
	forced, err := manager.ForceNewCluster(raftDir, sealer, time.Now())
	if err != nil {
		return fmt.Errorf("force new cluster: %w", err)
	}
	if err := f.reissueExpiredCert(forced.Cluster); err != nil {
		return fmt.Errorf("force new cluster: %w", err)
	}
	if forced.Skipped != "" {
		f.log.Warn("--force-new-cluster: nothing rewritten; remove the flag", "why", forced.Skipped)
		return nil
	}
	for _, m := range forced.Blacklisted {
		f.log.Warn("--force-new-cluster: member removed for good", "raft_id", fmt.Sprintf("%x", m.RaftId), "node_id", m.NodeId, "address", m.Address)
	}
	f.log.Warn("--force-new-cluster: this manager is now the sole voter of a new cluster of its state; "+
		"remove the flag, `jaco node remove --force` the lost managers and join new ones with tokens",
		"raft_id", fmt.Sprintf("%x", forced.Self.RaftId), "index", forced.Index, "term", forced.Term,
		"entries_past_old_commit_adopted", forced.Adopted, "members_removed", len(forced.Blacklisted), "old_state", forced.OldDir)
	return nil
}

// reissueExpiredCert gives this manager a fresh certificate from the CA
// of cluster when its own expired: forced to be the sole voter, no other
// manager is left to renew it (docs/adr/0039). A certificate still valid
// is kept; nil cluster (nothing replayed) changes nothing.
func (f *Former) reissueExpiredCert(cluster *api.Cluster) error {
	notAfter, expired := f.expiry.CertExpiredAt()
	if !expired || cluster == nil {
		return nil
	}
	_, certPEM, _, err := ca.LoadNodeFiles(f.cfg.Dir.Node())
	if err != nil {
		return err
	}
	id, err := ca.IdentityFromPEM(certPEM)
	if err != nil {
		return err
	}
	signer, err := ca.NewSigner(cluster.CaCertPem, cluster.CaKeyPem)
	if err != nil {
		return err
	}
	newCert, keyPEM, err := signer.Issue(id.NodeID, ca.RoleManager, cluster.Id, f.cfg.CertLifetime)
	if err != nil {
		return err
	}
	if err := f.keys.SaveNodeFiles(cluster.CaCertPem, newCert, keyPEM); err != nil {
		return err
	}
	f.log.Warn("--force-new-cluster: this manager's certificate had expired; it issued itself a fresh one",
		"expired_at", notAfter, "node_id", id.NodeID)
	return nil
}
