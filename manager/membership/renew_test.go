package membership

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/manager/carotation"
	"github.com/jaco-project/jaco/manager/state/store"
)

// TestRenewDrivesACARotation: the poll's answer carries the bundle of the
// phase, the node's reports are recorded, the phase moves on once the
// only node has done it, and a CSR sent during REISSUE is signed by the
// new CA.
func TestRenewDrivesACARotation(t *testing.T) {
	s, _, st := admitServer(t)
	ctx := identity.NewContext(context.Background(), identity.Identity{Kind: identity.Node, NodeID: "n2", Role: ca.RoleManager})
	newCert, newKey, err := ca.NewRootCA("c1")
	if err != nil {
		t.Fatal(err)
	}
	var oldCert []byte
	if err := st.Update(context.Background(), func(tx *store.Tx) error {
		c := tx.Cluster()
		oldCert = c.CaCertPem
		if err := carotation.Begin(c, newCert, newKey, false, time.Now()); err != nil {
			return err
		}
		return tx.Update(c)
	}); err != nil {
		t.Fatal(err)
	}
	poll := func(bundle, certIssuer []byte) *api.RenewCertificateResponse {
		t.Helper()
		req := &api.RenewCertificateRequest{}
		req.TrustFingerprint, _ = ca.BundleFingerprint(bundle)
		req.CertCaFingerprint, _ = ca.BundleFingerprint(certIssuer) // one CA: its bundle fingerprint is its fingerprint
		resp, err := s.RenewCertificate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	phase := func() api.CARotation_Phase {
		var c *api.Cluster
		st.View(func(tx store.ReadTx) { c = tx.Cluster() })
		return c.GetCaRotation().GetPhase()
	}

	resp := poll(oldCert, oldCert)
	if !bytes.Equal(resp.CaCertPem, ca.Bundle(oldCert, newCert)) || phase() != api.CARotation_PHASE_TRUST {
		t.Fatalf("first poll: bundle of %d bytes, phase %v", len(resp.CaCertPem), phase())
	}
	resp = poll(resp.CaCertPem, oldCert)
	if phase() != api.CARotation_PHASE_REISSUE {
		t.Fatalf("the only node trusts both CAs: phase %v, want REISSUE", phase())
	}
	resp = poll(resp.CaCertPem, oldCert)
	if !bytes.Equal(resp.CaCertPem, ca.Bundle(newCert, oldCert)) {
		t.Fatal("REISSUE answer does not list the new CA first")
	}
	resp, err = s.RenewCertificate(ctx, &api.RenewCertificateRequest{CsrPem: csr(t)})
	if err != nil {
		t.Fatal(err)
	}
	if fp, err := ca.IssuerFingerprint(resp.CertPem, newCert); err != nil || fp == "" {
		t.Fatalf("a certificate signed during REISSUE is not of the new CA (%v)", err)
	}
	poll(ca.Bundle(newCert, oldCert), newCert)
	if phase() != api.CARotation_PHASE_DROP {
		t.Fatalf("the only node reissued: phase %v, want DROP", phase())
	}
	poll(newCert, newCert)
	if phase() != api.CARotation_PHASE_UNSPECIFIED {
		t.Fatalf("the only node trusts the new CA alone: phase %v, want the rotation over", phase())
	}
	if n := node(st, "jaco-2"); n.TrustFingerprint == "" || n.CertCaFingerprint == "" {
		t.Fatalf("the node's reports are not recorded: %v", n)
	}
}

// TestRemovingTheNodeARotationWaitsForLetsItGoOn: a node that never
// reports holds the phase; once it is removed, the next poll moves the
// rotation on though it reports nothing new.
func TestRemovingTheNodeARotationWaitsForLetsItGoOn(t *testing.T) {
	s, _, st := admitServer(t)
	ctx := identity.NewContext(context.Background(), identity.Identity{Kind: identity.Node, NodeID: "n2", Role: ca.RoleManager})
	newCert, newKey, err := ca.NewRootCA("c1")
	if err != nil {
		t.Fatal(err)
	}
	var bundle []byte
	if err := st.Update(context.Background(), func(tx *store.Tx) error {
		c := tx.Cluster()
		if err := carotation.Begin(c, newCert, newKey, false, time.Now()); err != nil {
			return err
		}
		bundle = carotation.Bundle(c)
		if err := tx.Create(&api.Node{Id: "n3", Meta: &api.Meta{}, Hostname: "down-3", Role: api.NodeRole_NODE_ROLE_WORKER}); err != nil {
			return err
		}
		return tx.Update(c)
	}); err != nil {
		t.Fatal(err)
	}
	trust, _ := ca.BundleFingerprint(bundle)
	poll := func() {
		t.Helper()
		if _, err := s.RenewCertificate(ctx, &api.RenewCertificateRequest{TrustFingerprint: trust}); err != nil {
			t.Fatal(err)
		}
	}
	phase := func() api.CARotation_Phase {
		var c *api.Cluster
		st.View(func(tx store.ReadTx) { c = tx.Cluster() })
		return c.GetCaRotation().GetPhase()
	}
	poll()
	if phase() != api.CARotation_PHASE_TRUST {
		t.Fatalf("phase %v with a node that never reported, want TRUST", phase())
	}
	if err := st.Update(context.Background(), func(tx *store.Tx) error { return tx.Delete(tx.GetNode("n3")) }); err != nil {
		t.Fatal(err)
	}
	poll()
	if phase() != api.CARotation_PHASE_REISSUE {
		t.Fatalf("phase %v after the silent node was removed, want REISSUE", phase())
	}
}
