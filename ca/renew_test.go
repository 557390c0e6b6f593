package ca

import (
	"testing"
	"time"
)

func TestRenewAt(t *testing.T) {
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		notBefore time.Time
		notAfter  time.Time
		want      time.Time
	}{
		{"90 days backdated", issued.Add(-CertBackdate), issued.Add(90 * 24 * time.Hour), issued.Add(60 * 24 * time.Hour)},
		{"30 s backdated", issued.Add(-CertBackdate), issued.Add(30 * time.Second), issued.Add(20 * time.Second)},
		{"not backdated, shorter than the backdate", issued, issued.Add(3 * time.Minute), issued.Add(2 * time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RenewAt(tc.notBefore, tc.notAfter); !got.Equal(tc.want) {
				t.Errorf("RenewAt = %v, want %v", got, tc.want)
			}
		})
	}
}

// A certificate signed with a short lifetime is renewed two thirds of
// the way through it, counted from its issue: not at once (the backdate
// is not life) and not at its expiry. cfssl's own backdate starts from the
// issue time rounded to the minute, which put the renewal of a 30 s
// certificate issued in the second half of a minute past its expiry.
func TestSignedLifetimeRenewal(t *testing.T) {
	c := newTestCA(t, testCluster)
	_, csrPEM, err := NewNodeKey("n1")
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	certPEM, err := c.signer.Sign(csrPEM, "n1", RoleWorker, testCluster, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	nb, na, err := CertValidity(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	// x509 keeps whole seconds: allow one either side.
	within := func(what string, got, lo, hi time.Time) {
		t.Helper()
		if got.Before(lo.Add(-time.Second)) || got.After(hi.Add(time.Second)) {
			t.Errorf("%s = %v, want between %v and %v", what, got, lo, hi)
		}
	}
	within("not before", nb, before.Add(-CertBackdate), after.Add(-CertBackdate))
	within("not after", na, before.Add(30*time.Second), after.Add(30*time.Second))
	within("renewal", RenewAt(nb, na), before.Add(20*time.Second), after.Add(20*time.Second))
}
