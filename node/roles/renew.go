package roles

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
)

// The role and certificate check (docs/design.md §4, "Roles"): every
// Config.Interval the node asks the leader (RenewCertificate without a
// request) which role the cluster holds for it. When that differs from
// its certificate's role, or the certificate is past two thirds of its
// life, it sends a fresh key's request and installs what comes back:
//
//   - worker → manager (promoted): the leader already added it to raft as
//     a nonvoter; the daemon writes an empty raft member with the raft id
//     it was given and starts it, as a manager that joined would.
//   - manager → worker (demoted): the leader already removed it from raft;
//     the daemon stops its manager and drops its raft state, and the node
//     runs on as a worker (the agent and its replicas carry on).
//   - same role: the certificate is replaced; connections present the new
//     one at their next handshake.

// renewCallTimeout bounds one RenewCertificate call to one manager.
const renewCallTimeout = 5 * time.Second

// checkCert asks for the role, and renews when the role changed or the
// certificate is due.
func (p *Poller) checkCert(ctx context.Context) error {
	if s := p.d.State(); s == api.NodeState_NODE_STATE_UNINITIALIZED || s == api.NodeState_NODE_STATE_LOCKED {
		return nil
	}
	caPEM, certPEM, _, err := ca.LoadNodeFiles(p.cfg.NodeDir) // the private key stays sealed: not needed here
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
		return p.CertExpiredError(notAfter, id.Role == ca.RoleManager)
	}
	due := !time.Now().Before(ca.RenewAt(notBefore, notAfter))
	var keyPEM, csrPEM []byte
	if due {
		if keyPEM, csrPEM, err = ca.NewNodeKey(id.NodeID); err != nil {
			return err
		}
	}
	report := caReport(caPEM, certPEM)
	resp, err := p.callRenew(ctx, csrPEM, report)
	if err != nil {
		return err
	}
	p.rememberManagers(api.MemberAddrs(resp.Members))
	if !bytes.Equal(resp.CaCertPem, caPEM) {
		// A CA rotation moved on (carotation.go): trust what the cluster
		// trusts now, and report it at once.
		if err := p.installTrust(resp.CaCertPem, caPEM); err != nil {
			return err
		}
		caPEM = resp.CaCertPem
		defer p.kickCertLoop()
	}
	if !issuedBySigner(certPEM, caPEM) {
		due = true // another CA signs now: reissue under it
	}
	p.keepManagerConns()
	if roleName(resp.Role) == id.Role && !due {
		return nil
	}
	if len(resp.CertPem) == 0 {
		// The role changed, or the signing CA: now ask for the
		// certificate that goes with it.
		if keyPEM, csrPEM, err = ca.NewNodeKey(id.NodeID); err != nil {
			return err
		}
		if resp, err = p.callRenew(ctx, csrPEM, report); err != nil {
			return err
		}
	}
	newID, err := checkRenewal(resp, caPEM, id)
	if err != nil {
		return err
	}
	if err := p.installCert(ctx, resp, keyPEM, newID, notAfter); err != nil {
		return err
	}
	p.kickCertLoop() // report the new certificate's CA at once
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
func (p *Poller) installCert(ctx context.Context, resp *api.RenewCertificateResponse, keyPEM []byte, id ca.NodeIdentity, oldNotAfter time.Time) error {
	unlock, err := p.d.LockInit()
	if err != nil {
		return err
	}
	defer unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	isManager := p.d.Manager() != nil
	if (id.Role == ca.RoleManager) != isManager {
		// Connections to managers carry the identity of the certificate
		// they were opened with: a demoted node must not keep a manager's.
		// Open new ones. (The manager's own forwarding connections go with
		// it.)
		defer p.conns.CloseAll()
	}
	switch {
	case id.Role == ca.RoleManager && !isManager:
		return p.becomeManager(resp, keyPEM, id)
	case id.Role == ca.RoleWorker && isManager:
		return p.becomeWorker(resp, keyPEM)
	}
	if err := p.saveCert(resp, keyPEM); err != nil {
		return err
	}
	_, notAfter, _ := ca.CertValidity(resp.CertPem)
	p.log.Info("node certificate renewed", "role", id.Role, "was_valid_until", oldNotAfter, "valid_until", notAfter)
	return nil
}

func (p *Poller) saveCert(resp *api.RenewCertificateResponse, keyPEM []byte) error {
	return p.files.InstallNodeFiles(resp.CaCertPem, resp.CertPem, keyPEM)
}

// becomeManager starts a raft member for a promoted node. The raft state
// is written before the manager certificate is saved, and the manager
// started after: a crash in between leaves a node that restarts as a
// manager and renews to the right certificate.
func (p *Poller) becomeManager(resp *api.RenewCertificateResponse, keyPEM []byte, id ca.NodeIdentity) error {
	if resp.RaftId == 0 {
		return errors.New("promotion: the leader named no raft id")
	}
	if err := p.files.WriteRaftState(id.ClusterID, id.NodeID, resp.RaftId, resp.Members); err != nil {
		return fmt.Errorf("promotion: %w", err)
	}
	if err := p.saveCert(resp, keyPEM); err != nil {
		return fmt.Errorf("promotion: %w", err)
	}
	if err := p.d.StartManager(); err != nil {
		return fmt.Errorf("promotion: %w", err)
	}
	p.log.Info("promoted to manager: raft member started", "raft_id", fmt.Sprintf("%x", resp.RaftId))
	return nil
}

// becomeWorker stops the manager of a demoted node, which the leader
// already took out of raft, and drops its raft state. The worker
// certificate is saved first: a crash before the raft state is gone
// restarts a manager that is told it was removed, asks, and finishes here.
func (p *Poller) becomeWorker(resp *api.RenewCertificateResponse, keyPEM []byte) error {
	p.files.ForgetUnlockKey() // a worker's key is in clear: it has no data keys to seal it
	if err := p.saveCert(resp, keyPEM); err != nil {
		return fmt.Errorf("demotion: %w", err)
	}
	if err := p.d.StopManager(); err != nil {
		return fmt.Errorf("demotion: %w", err)
	}
	p.log.Info("demoted to worker: manager stopped, raft state removed; the agent carries on")
	return nil
}

// rememberManagers keeps the list of managers current for the node's
// next start as a worker, or after a demotion (managers.json): the
// addresses it joined through may have moved since (docs/adr/0038).
func (p *Poller) rememberManagers(addrs []string) {
	if len(addrs) == 0 {
		return
	}
	if old, err := LoadManagers(p.cfg.ManagersFile); err == nil && slices.Equal(old, addrs) {
		return
	}
	if err := SaveManagers(p.cfg.ManagersFile, addrs); err != nil {
		p.log.Warn("could not save the managers' addresses", "err", err)
	}
}

// keepManagerConns closes the pooled connections to addresses no manager
// has any more: a manager that moved is not asked at its old address,
// and a failed connection there would go on redialling it
// (docs/adr/0038). Those the agent's sessions use now stay.
func (p *Poller) keepManagerConns() {
	p.conns.Keep(append(p.renewTargets(), p.d.AgentManagers()...))
}

// renewTargets are the managers to ask, the others first: a manager that
// was just removed from raft cannot forward to the leader any more.
func (p *Poller) renewTargets() []string {
	var addrs []string
	self := p.d.AdvertiseAddr()
	m := p.d.Manager()
	if m != nil {
		// By raft id, not address: after a restart with a new advertise
		// address this member's record still holds the old one.
		for _, mem := range m.RaftMembers() {
			if mem.RaftId != m.RaftID() {
				addrs = append(addrs, mem.Address)
			}
		}
	}
	saved, _ := LoadManagers(p.cfg.ManagersFile)
	for _, a := range saved {
		if a != self && !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	if m != nil {
		addrs = append(addrs, self)
	}
	return addrs
}

// callRenew calls RenewCertificate on the managers in turn until one
// answers. node_removed (the node is not in the cluster) is final.
func (p *Poller) callRenew(ctx context.Context, csrPEM []byte, report *api.RenewCertificateRequest) (*api.RenewCertificateResponse, error) {
	addrs := p.renewTargets()
	if len(addrs) == 0 {
		return nil, errors.New("no manager address known")
	}
	var errs []error
	for _, addr := range addrs {
		conn, err := p.conns.Get(addr)
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
