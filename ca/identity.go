package ca

import (
	"crypto/x509"
	"errors"
	"fmt"
	"regexp"
)

// Node roles, as carried in a node certificate's OU.
const (
	RoleManager = "manager"
	RoleWorker  = "worker"
)

// NodeIdentity is who a node certificate names: CN, OU and O of its subject.
type NodeIdentity struct {
	NodeID    string
	Role      string
	ClusterID string
}

// IdentityFromPEM is IdentityFromCert of the first certificate of certPEM.
func IdentityFromPEM(certPEM []byte) (NodeIdentity, error) {
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return NodeIdentity{}, fmt.Errorf("node certificate: %w", err)
	}
	return IdentityFromCert(cert)
}

// IdentityFromCert reads the identity from a node certificate. It does not
// verify the certificate; call it on a chain the TLS layer has verified. It
// fails when CN, OU or O is missing or ambiguous, or the OU is not a role.
func IdentityFromCert(cert *x509.Certificate) (NodeIdentity, error) {
	if cert == nil {
		return NodeIdentity{}, errors.New("node identity: no certificate")
	}
	subj := cert.Subject
	if subj.CommonName == "" {
		return NodeIdentity{}, errors.New("node identity: certificate has no CN (node id)")
	}
	if len(subj.OrganizationalUnit) != 1 {
		return NodeIdentity{}, fmt.Errorf("node identity: certificate of %s has %d OUs, want exactly 1 (role)",
			subj.CommonName, len(subj.OrganizationalUnit))
	}
	if len(subj.Organization) != 1 || subj.Organization[0] == "" {
		return NodeIdentity{}, fmt.Errorf("node identity: certificate of %s has no single O (cluster id)", subj.CommonName)
	}
	id := NodeIdentity{
		NodeID:    subj.CommonName,
		Role:      subj.OrganizationalUnit[0],
		ClusterID: subj.Organization[0],
	}
	if err := validateRole(id.Role); err != nil {
		return NodeIdentity{}, fmt.Errorf("node identity of %s: %w", id.NodeID, err)
	}
	return id, nil
}

func validateRole(role string) error {
	if role != RoleManager && role != RoleWorker {
		return fmt.Errorf("role %q is neither %q nor %q", role, RoleManager, RoleWorker)
	}
	return nil
}

// nodeIDPattern keeps node ids usable as a DNS SAN and free of the separators
// other packages put around them.
var nodeIDPattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$`)

func validateNodeID(nodeID string) error {
	if !nodeIDPattern.MatchString(nodeID) {
		return fmt.Errorf("node id %q is not a DNS-style name (letters, digits, '.', '-'; at most 253 characters)", nodeID)
	}
	return nil
}
