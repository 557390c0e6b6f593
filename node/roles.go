package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/manager"
	"github.com/jaco-project/jaco/manager/state/raft"
)

// The node's side of roles and certificates (docs/design.md §4, "Roles"):
// every RoleCheckInterval the node asks the leader (RenewCertificate
// without a request) which role the cluster holds for it. When that differs
// from its certificate's role, or the certificate is past two thirds of its
// life, it sends a fresh key's request and installs what comes back:
//
//   - worker → manager (promoted): the leader already added it to raft as
//     a nonvoter; it writes an empty raft member with the raft id it was
//     given and starts it, as a manager that joined would.
//   - manager → worker (demoted): the leader already removed it from raft;
//     it stops its manager, drops its raft state and runs on as a worker
//     (the agent and its replicas carry on).
//   - same role: the certificate is replaced; connections present the new
//     one at their next handshake.

// renewCallTimeout bounds one RenewCertificate call to one manager.
const renewCallTimeout = 5 * time.Second

// runCertLoop checks the role and the certificate until ctx ends.
func (n *Node) runCertLoop(ctx context.Context) {
	n.runLoop(ctx, loop{interval: n.cfg.RoleCheckInterval, kick: n.certKick,
		failMsg: "role and certificate check failed; retrying", step: n.checkCert})
}

// kickCertLoop asks for a check now.
func (n *Node) kickCertLoop() { kick(n.certKick) }

// checkCert asks for the role, and renews when the role changed or the
// certificate is due.
func (n *Node) checkCert(ctx context.Context) error {
	if !n.initialized() || n.State() == api.NodeState_NODE_STATE_LOCKED {
		return nil
	}
	caPEM, certPEM, _, err := ca.LoadNodeFiles(n.cfg.nodeDir()) // the private key stays sealed: not needed here
	if err != nil {
		return nil // a node without certificate files has nothing to renew
	}
	id, err := ca.IdentityFromPEM(certPEM)
	if err != nil {
		return err
	}
	notBefore, notAfter, err := ca.CertValidity(certPEM)
	if err != nil {
		return err
	}
	if time.Now().After(notAfter) {
		return n.certExpiredError(notAfter, id.Role == ca.RoleManager)
	}
	due := !time.Now().Before(ca.RenewAt(notBefore, notAfter))
	var keyPEM, csrPEM []byte
	if due {
		if keyPEM, csrPEM, err = ca.NewNodeKey(id.NodeID); err != nil {
			return err
		}
	}
	report := caReport(caPEM, certPEM)
	resp, err := n.callRenew(ctx, csrPEM, report)
	if err != nil {
		return err
	}
	n.rememberManagers(manager.MemberAddrs(resp.Members))
	if !bytes.Equal(resp.CaCertPem, caPEM) {
		// A CA rotation moved on (carotation.go): trust what the cluster
		// trusts now, and report it at once.
		if err := n.installTrust(resp.CaCertPem, caPEM); err != nil {
			return err
		}
		caPEM = resp.CaCertPem
		defer n.kickCertLoop()
	}
	if !issuedBySigner(certPEM, caPEM) {
		due = true // another CA signs now: reissue under it
	}
	n.keepManagerConns()
	if roleName(resp.Role) == id.Role && !due {
		return nil
	}
	if len(resp.CertPem) == 0 {
		// The role changed, or the signing CA: now ask for the
		// certificate that goes with it.
		if keyPEM, csrPEM, err = ca.NewNodeKey(id.NodeID); err != nil {
			return err
		}
		if resp, err = n.callRenew(ctx, csrPEM, report); err != nil {
			return err
		}
	}
	newID, err := checkRenewal(resp, caPEM, id)
	if err != nil {
		return err
	}
	if err := n.installCert(ctx, resp, keyPEM, newID, notAfter); err != nil {
		return err
	}
	n.kickCertLoop() // report the new certificate's CA at once
	return nil
}

func roleName(r api.NodeRole) string {
	if r == api.NodeRole_NODE_ROLE_MANAGER {
		return ca.RoleManager
	}
	return ca.RoleWorker
}

// checkRenewal makes sure the certificate is this node's, of this
// cluster's CA, with the role the answer names.
func checkRenewal(resp *api.RenewCertificateResponse, caPEM []byte, old ca.NodeIdentity) (ca.NodeIdentity, error) {
	if !bytes.Equal(bytes.TrimSpace(resp.CaCertPem), bytes.TrimSpace(caPEM)) {
		return ca.NodeIdentity{}, errors.New("renewal: the answer names another CA")
	}
	id, err := ca.IdentityFromPEM(resp.CertPem)
	if err != nil {
		return ca.NodeIdentity{}, fmt.Errorf("renewal: %w", err)
	}
	if id.NodeID != old.NodeID || id.ClusterID != old.ClusterID || id.Role != roleName(resp.Role) {
		return ca.NodeIdentity{}, fmt.Errorf("renewal: certificate for %s/%s as %s, want %s/%s as %s",
			id.ClusterID, id.NodeID, id.Role, old.ClusterID, old.NodeID, roleName(resp.Role))
	}
	return id, nil
}

// installCert saves the new certificate and changes what runs to match
// its role.
func (n *Node) installCert(ctx context.Context, resp *api.RenewCertificateResponse, keyPEM []byte, id ca.NodeIdentity, oldNotAfter time.Time) error {
	unlock, err := n.lockInit()
	if err != nil {
		return err
	}
	defer unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	m := n.Manager()
	if (id.Role == ca.RoleManager) != (m != nil) {
		// Connections to managers carry the identity of the certificate
		// they were opened with: a demoted node must not keep a manager's.
		// Open new ones. (The manager's own forwarding connections go with
		// it.)
		defer n.managerConns.CloseAll()
	}
	switch {
	case id.Role == ca.RoleManager && m == nil:
		return n.becomeManager(resp, keyPEM, id)
	case id.Role == ca.RoleWorker && m != nil:
		return n.becomeWorker(m, resp, keyPEM)
	}
	if err := n.saveCert(resp, keyPEM); err != nil {
		return err
	}
	_, notAfter, _ := ca.CertValidity(resp.CertPem)
	n.log.Info("node certificate renewed", "role", id.Role, "was_valid_until", oldNotAfter, "valid_until", notAfter)
	return nil
}

func (n *Node) saveCert(resp *api.RenewCertificateResponse, keyPEM []byte) error {
	if err := n.keys.SaveNodeFiles(resp.CaCertPem, resp.CertPem, keyPEM); err != nil {
		return err
	}
	return n.reloadTLS()
}

// becomeManager starts a raft member for a promoted node. The raft state
// is written before the manager certificate is saved, and the manager
// started after: a crash in between leaves a node that restarts as a
// manager and renews to the right certificate.
func (n *Node) becomeManager(resp *api.RenewCertificateResponse, keyPEM []byte, id ca.NodeIdentity) error {
	if resp.RaftId == 0 {
		return errors.New("promotion: the leader named no raft id")
	}
	if err := n.writeJoinedRaftState(id.ClusterID, id.NodeID, resp.RaftId, resp.Members); err != nil {
		return fmt.Errorf("promotion: %w", err)
	}
	if err := n.saveCert(resp, keyPEM); err != nil {
		return fmt.Errorf("promotion: %w", err)
	}
	if err := n.startManager(); err != nil {
		return fmt.Errorf("promotion: %w", err)
	}
	n.log.Info("promoted to manager: raft member started", "raft_id", fmt.Sprintf("%x", resp.RaftId))
	return nil
}

// becomeWorker stops the manager of a demoted node, which the leader
// already took out of raft, and drops its raft state. The worker
// certificate is saved first: a crash before the raft state is gone
// restarts a manager that is told it was removed, asks, and finishes here.
func (n *Node) becomeWorker(m *manager.Manager, resp *api.RenewCertificateResponse, keyPEM []byte) error {
	n.keys.ForgetUnlockKey() // a worker's key is in clear: it has no data keys to seal it
	if err := n.saveCert(resp, keyPEM); err != nil {
		return fmt.Errorf("demotion: %w", err)
	}
	n.mgr.Store(nil)
	if err := m.Stop(); err != nil && !errors.Is(err, raft.ErrRemoved) {
		n.log.Warn("demotion: manager stopped with an error", "err", err)
	}
	if err := os.RemoveAll(n.cfg.raftDir()); err != nil {
		return fmt.Errorf("demotion: remove raft state: %w", err)
	}
	if err := os.Remove(n.cfg.dekPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("demotion: remove raft key: %w", err)
	}
	n.log.Info("demoted to worker: manager stopped, raft state removed; the agent carries on")
	return nil
}

// rememberManagers keeps the list of managers current for the node's
// next start as a worker, or after a demotion (managers.json): the
// addresses it joined through may have moved since (docs/adr/0038).
func (n *Node) rememberManagers(addrs []string) {
	if len(addrs) == 0 {
		return
	}
	if old, err := n.joinManagers(); err == nil && slices.Equal(old, addrs) {
		return
	}
	if err := n.saveJoinManagers(addrs); err != nil {
		n.log.Warn("could not save the managers' addresses", "err", err)
	}
}

// keepManagerConns closes the pooled connections to addresses no manager
// has any more: a manager that moved is not asked at its old address,
// and a failed connection there would go on redialling it
// (docs/adr/0038). Those the agent's sessions use now stay.
func (n *Node) keepManagerConns() {
	keep := n.renewTargets()
	if a := n.agent.Load(); a != nil {
		keep = append(keep, a.Managers()...)
	}
	n.managerConns.Keep(keep)
}

// renewTargets are the managers to ask, the others first: a manager that
// was just removed from raft cannot forward to the leader any more.
func (n *Node) renewTargets() []string {
	var addrs []string
	if m := n.Manager(); m != nil {
		// By raft id, not address: after a restart with a new advertise
		// address this member's record still holds the old one.
		for _, mem := range m.RaftMembers() {
			if mem.RaftId != m.RaftID() {
				addrs = append(addrs, mem.Address)
			}
		}
	}
	saved, _ := n.joinManagers()
	for _, a := range saved {
		if a != n.advertise && !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	if n.Manager() != nil {
		addrs = append(addrs, n.advertise)
	}
	return addrs
}

// callRenew calls RenewCertificate on the managers in turn until one
// answers. node_removed (the node is not in the cluster) is final.
func (n *Node) callRenew(ctx context.Context, csrPEM []byte, report *api.RenewCertificateRequest) (*api.RenewCertificateResponse, error) {
	addrs := n.renewTargets()
	if len(addrs) == 0 {
		return nil, errors.New("no manager address known")
	}
	var errs []error
	for _, addr := range addrs {
		conn, err := n.managerConns.Get(addr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, renewCallTimeout)
		resp, err := api.NewMembershipServiceClient(conn).RenewCertificate(cctx, &api.RenewCertificateRequest{
			CsrPem: csrPEM, TrustFingerprint: report.GetTrustFingerprint(), CertCaFingerprint: report.GetCertCaFingerprint()})
		cancel()
		if err == nil {
			return resp, nil
		}
		if reason.Of(err) == reason.NodeRemoved {
			return nil, fmt.Errorf("%w: %s", errRenewRefused, status.Convert(err).Message())
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("ask the managers for this node's role: %w", errors.Join(errs...))
}

var errRenewRefused = errors.New("the cluster refused this node")

// removalGrace is how long a manager told it left raft waits to learn
// that it was demoted (and runs on as a worker) before it concludes it
// was removed from the cluster.
const removalGrace = 30 * time.Second

// afterRaftRemoval decides, for a manager whose raft member was removed,
// between a demotion (the cluster holds it as a worker: the cert loop
// installs the worker certificate) and a removal (ErrRemoved stops the
// daemon).
func (n *Node) afterRaftRemoval(ctx context.Context) error {
	deadline := time.Now().Add(removalGrace)
	for time.Now().Before(deadline) {
		resp, err := n.callRenew(ctx, nil, nil)
		switch {
		case errors.Is(err, errRenewRefused):
			return ErrRemoved
		case err == nil && resp.Role == api.NodeRole_NODE_ROLE_WORKER:
			n.log.Info("left raft by a demotion; becoming a worker")
			n.kickCertLoop()
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(500 * time.Millisecond):
		}
	}
	return ErrRemoved
}
