package integration

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/ca/token"
	"github.com/jaco-project/jaco/internal/datadir"
)

// TestCARotationStaticFormation: the CA a statically formed cluster
// derived from its join secret is rotated like any other (docs/adr/0041).
// Afterwards no member trusts the derived CA, so the secret no longer
// mints certificates the cluster accepts; the operator token file the
// formation left pins the new CA; and a member restarted (without
// --initial-cluster) goes by its files and the raft state, not by what
// the secret derives, and serves writes.
func TestCARotationStaticFormation(t *testing.T) {
	t.Parallel()
	c := &mcluster{hub: newHub(t), ids: make(map[*nsDaemon]string)}
	secretPath := secretFile(t, formationSecret)
	ds := staticSet(t, c, secretPath)
	c.startFormed(t, ds)
	wantWritesThrough(t, ds[:1])

	i := slices.Index(ds[0].flags, "--initial-cluster")
	secret, err := ca.ReadJoinSecret(secretPath)
	if err != nil {
		t.Fatal(err)
	}
	derived, err := ca.DeriveCluster(secret, ds[0].flags[i+1]) // staticSet lists the members sorted: canonical
	if err != nil {
		t.Fatal(err)
	}
	derivedFP, _ := token.Fingerprint(derived.CACertPEM)
	caPEM, err := os.ReadFile(datadir.Dir(ds[0].dir).Node() + "/" + ca.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	if fp, _ := token.Fingerprint(caPEM); fp != derivedFP {
		t.Fatalf("the formed cluster's CA %s is not the derived one %s", fp, derivedFP)
	}

	r := ds[1].jaco("cluster", "ca", "--rotate")
	if r.code != 0 {
		t.Fatalf("cluster ca --rotate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	m := regexp.MustCompile(`new CA ([0-9a-f]{64})`).FindStringSubmatch(r.stdout)
	if m == nil || !strings.Contains(r.stdout, "CA rotation done") {
		t.Fatalf("cluster ca --rotate printed:\n%s", r.stdout)
	}
	newFP := m[1]
	for _, d := range ds {
		caPEM, certPEM, _, err := ca.LoadNodeFiles(datadir.Dir(d.dir).Node())
		if err != nil {
			t.Fatal(err)
		}
		cas, _ := ca.ParseBundle(caPEM)
		if len(cas) != 1 || token.FingerprintDER(cas[0].Raw) != newFP {
			t.Errorf("%s trusts %d CAs, want the new one alone", d.name, len(cas))
		}
		if fp, _ := ca.IssuerFingerprint(certPEM, caPEM); fp != newFP {
			t.Errorf("%s has a certificate of CA %q, want %s", d.name, fp, newFP)
		}
		// Every member wrote the derived operator token; each rewrites it
		// when it drops the old CA.
		eventually(t, 10*time.Second, func() error {
			data, err := os.ReadFile(datadir.Dir(d.dir).OperatorToken())
			if err != nil {
				return err
			}
			tok, err := token.Parse(string(data))
			if err != nil || tok.CAFingerprint != newFP || tok.Secret != derived.OperatorToken.Secret {
				return fmt.Errorf("%s operator token file pins %s (%v), want the derived secret pinning %s", d.name, tok.CAFingerprint, err, newFP)
			}
			return nil
		})
	}
	wantWritesThrough(t, ds[:1])

	d := ds[2]
	d.stop(t)
	d.flags = slices.Delete(slices.Clone(d.flags), i, i+2)
	d.start(t)
	c.waitConverged(t, ds)
	wantWritesThrough(t, []*nsDaemon{d})
	if s, err := d.tryStatus(); err != nil || s.ClusterID == "" {
		t.Fatalf("restarted member: %+v, %v", s, err)
	}
}
