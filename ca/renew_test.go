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

// A certificate signed with a short lifetime is renewed after about two
// thirds of it, not at once (the backdate is not life) and not after it
// expired.
func TestSignedLifetimeRenewal(t *testing.T) {
	c := newTestCA(t, testCluster)
	_, csrPEM, err := NewNodeKey("n1")
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	certPEM, err := c.signer.Sign(csrPEM, "n1", RoleWorker, testCluster, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	nb, na, err := CertValidity(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	if life := na.Sub(before); life < 50*time.Second || life > 70*time.Second {
		t.Fatalf("certificate good for %v after issue, want about 1m", life)
	}
	at := RenewAt(nb, na)
	if d := at.Sub(before); d < 20*time.Second || d > 50*time.Second {
		t.Errorf("renewal %v after issue, want about 40s (two thirds of 1m)", d)
	}
}
