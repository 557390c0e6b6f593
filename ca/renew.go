package ca

import (
	"fmt"
	"time"
)

// CertBackdate is how far before its issue a node certificate's validity
// starts (the signer backdates for clock skew).
const CertBackdate = 5 * time.Minute

// RenewAt is when a certificate valid from notBefore to notAfter should be
// renewed: at two thirds of its life from issue, which leaves a third of it
// (30 days of the default 90) to retry through manager outages before it
// expires. The backdate is not counted as life: a 30 s certificate is
// renewed 20 s after issue, not at once.
func RenewAt(notBefore, notAfter time.Time) time.Time {
	issued := notBefore.Add(CertBackdate)
	if !issued.Before(notAfter) {
		issued = notBefore
	}
	return issued.Add(notAfter.Sub(issued) * 2 / 3)
}

// CertValidity returns the validity window of the first certificate in
// certPEM.
func CertValidity(certPEM []byte) (notBefore, notAfter time.Time, err error) {
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("certificate validity: %w", err)
	}
	return cert.NotBefore, cert.NotAfter, nil
}
