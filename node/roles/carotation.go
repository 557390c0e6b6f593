package roles

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/ca/token"
)

// The node's side of a CA rotation (docs/adr/0041-ca-rotation.md). Every
// answer to the role and certificate poll (renew.go) carries the CA bundle the cluster
// wants trusted, the CA that signs first. A node whose bundle differs
// installs the new one at once, keeping its certificate; one whose
// certificate was not issued by the CA that signs now renews it at once.
// Each poll reports the bundle the node trusts and the CA of its
// certificate, which is what the leader waits on to move the rotation on.
//
// Connections are never closed for this: a connection keeps the
// certificates it was opened with, and new handshakes present the new
// certificate and verify against the new bundle (the daemon's dialler
// reads both at each handshake, its listener its config: node/peers.go).

// caReport is what a poll reports: the fingerprint of the bundle this
// node trusts and of the CA its certificate was issued by.
func caReport(caPEM, certPEM []byte) *api.RenewCertificateRequest {
	req := &api.RenewCertificateRequest{}
	req.TrustFingerprint, _ = ca.BundleFingerprint(caPEM)
	req.CertCaFingerprint, _ = ca.IssuerFingerprint(certPEM, caPEM)
	return req
}

// issuedBySigner reports whether certPEM was issued by the first CA of
// the bundle, the one that signs now.
func issuedBySigner(certPEM, caPEM []byte) bool {
	cas, err := ca.ParseBundle(caPEM)
	if err != nil {
		return false
	}
	fp, err := ca.IssuerFingerprint(certPEM, caPEM)
	return err == nil && fp == token.FingerprintDER(cas[0].Raw)
}

// installTrust replaces the CA bundle this node trusts with the one the
// leader sent, keeping its certificate and key. The new bundle must share
// a CA with the old: each step of a rotation keeps one, and a bundle that
// does not is no step of this cluster's rotation.
func (p *Poller) installTrust(newPEM, oldPEM []byte) error {
	newCAs, err := ca.ParseBundle(newPEM)
	if err != nil {
		return fmt.Errorf("CA bundle from the leader: %w", err)
	}
	oldCAs, err := ca.ParseBundle(oldPEM)
	if err != nil {
		return fmt.Errorf("this node's CA bundle: %w", err)
	}
	if !sharesCA(newCAs, oldCAs) {
		return errors.New("the leader's CA bundle shares no CA with this node's: refused")
	}
	unlock, err := p.d.LockInit()
	if err != nil {
		return err
	}
	defer unlock()
	_, certPEM, keyPEM, err := p.files.LoadNodeFiles()
	if err != nil {
		return err
	}
	if err := p.files.InstallNodeFiles(newPEM, certPEM, keyPEM); err != nil {
		return err
	}
	p.log.Info("CA rotation: trusted CAs changed", "cas", len(newCAs), "signing_ca", token.FingerprintDER(newCAs[0].Raw))
	if len(newCAs) == 1 {
		p.repinOperatorToken(token.FingerprintDER(newCAs[0].Raw))
	}
	return nil
}

// repinOperatorToken rewrites the operator token file that formation
// left (node/formation) to pin the CA fp, once the old CA is
// trusted no more: its secret is unchanged, and the old pin would fail
// with ca_mismatch. A failure is logged: the file is a convenience.
func (p *Poller) repinOperatorToken(fp string) {
	data, err := os.ReadFile(p.cfg.OperatorTokenFile)
	if err != nil {
		return // none left here, or moved somewhere safe as the log asked
	}
	tok, err := token.Parse(string(data))
	if err != nil || tok.CAFingerprint == fp {
		return
	}
	tok.CAFingerprint = fp
	if err := p.files.SaveOperatorToken(tok.String()); err != nil {
		p.log.Warn("CA rotation: the operator token file still pins the old CA", "err", err)
	}
}

func sharesCA(a, b []*x509.Certificate) bool {
	for _, x := range a {
		for _, y := range b {
			if x.Equal(y) {
				return true
			}
		}
	}
	return false
}
