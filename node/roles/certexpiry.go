package roles

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
)

// A node that was off past its certificate's expiry cannot renew it: it
// would prove who it is with that very certificate, and TLS refuses an
// expired one (docs/adr/0039-rejoin-expired-certificate.md). A worker
// starts anyway, without its agent (its replicas run on untouched), and
// says what to run: `jaco node join --rejoin`. A manager refuses to start
// and names the ways back.

// ErrCertExpired: this node's certificate expired; the error's text says
// what to run. The reason word is reason.CertificateExpired.
var ErrCertExpired = errors.New("this node's certificate expired")

// CertExpiredAt returns when this node's certificate expired, and whether
// it has: false also when there is no readable certificate.
func (p *Poller) CertExpiredAt() (time.Time, bool) {
	_, certPEM, _, err := ca.LoadNodeFiles(p.cfg.NodeDir)
	if err != nil {
		return time.Time{}, false
	}
	_, notAfter, err := ca.CertValidity(certPEM)
	if err != nil {
		return time.Time{}, false
	}
	return notAfter, time.Now().After(notAfter)
}

// CertExpiredError is ErrCertExpired with the way back for this node:
// a worker rejoins under its id, a manager is replaced.
func (p *Poller) CertExpiredError(notAfter time.Time, manager bool) error {
	when := notAfter.Format(time.RFC3339)
	if !manager {
		return fmt.Errorf("%w at %s: managers refuse it and it cannot renew it. "+
			"Its replicas keep running. To bring it back with its node id and replicas, run on a manager "+
			"'jaco node issue-join-token --role worker', then on this node "+
			"'jaco node join --rejoin --peer MANAGER:7000 --token TOKEN'", ErrCertExpired, when)
	}
	return fmt.Errorf("%w at %s: a manager cannot renew or rejoin with an expired certificate. "+
		"If another manager is running: on it run 'jaco node remove --force %s' and "+
		"'jaco node issue-join-token --role manager'; here move %s away, start jacod on an empty data dir "+
		"and run 'jaco node join --peer MANAGER:7000 --token TOKEN'. "+
		"If no manager with a valid certificate is left: start this one once with 'jacod --force-new-cluster' "+
		"(it gets a fresh certificate), then rejoin the workers with 'jaco node join --rejoin'",
		ErrCertExpired, when, p.cfg.NodeName, p.cfg.DataDir)
}

// certExpiredStatus is CertExpiredError as the API answers it.
func certExpiredStatus(err error) error {
	return reason.Error(codes.FailedPrecondition, reason.CertificateExpired, "%v", err)
}

// CertExpiredRefusal is the refusal of a call on a node whose certificate
// expired (the status carrying certificate_expired), or nil. An
// uninitialized node reads no file.
func (p *Poller) CertExpiredRefusal() error {
	if p.d.State() == api.NodeState_NODE_STATE_UNINITIALIZED {
		return nil
	}
	if notAfter, expired := p.CertExpiredAt(); expired {
		return certExpiredStatus(p.CertExpiredError(notAfter, p.d.Manager() != nil))
	}
	return nil
}
