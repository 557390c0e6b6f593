// Package carotation is the state machine of a cluster CA rotation
// (docs/adr/0041): what the Cluster object holds in each phase, the CA
// bundle nodes are to trust, when a node has done what a phase asks, and
// when the rotation moves on. It keeps no state of its own: everything is
// in the Cluster and Node objects, read and written in the caller's
// transaction.
//
// The phases: TRUST (the old CA signs; nodes learn to trust the new one
// beside it), REISSUE (the new CA signs; every node's certificate is
// reissued under it), DROP (nodes stop trusting the old CA), then done:
// no node trusts the old CA any more. A phase
// ends when every node in the store has reported reaching its goal, so a
// node that is down holds the rotation until it returns or is removed.
package carotation

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/ca/token"
)

// ErrInProgress refuses a rotation while another one runs.
var ErrInProgress = errors.New("a CA rotation is already under way")

// Bundle is the CA bundle nodes are to trust now, the CA that signs
// first: during TRUST the old then the new CA, during REISSUE the new
// then the old, otherwise (DROP, or no rotation) the cluster's CA alone.
func Bundle(c *api.Cluster) []byte {
	r := c.GetCaRotation()
	switch r.GetPhase() {
	case api.CARotation_PHASE_TRUST:
		return ca.Bundle(c.CaCertPem, r.NewCaCertPem)
	case api.CARotation_PHASE_REISSUE:
		return ca.Bundle(c.CaCertPem, r.OldCaCertPem)
	}
	return ca.Bundle(c.CaCertPem)
}

// Begin starts a rotation of c to the CA certPEM with key keyPEM, which
// the caller checked (ca.CheckCA). c is changed in place.
func Begin(c *api.Cluster, certPEM, keyPEM []byte, external bool, now time.Time) error {
	if c.CaRotation != nil {
		return ErrInProgress
	}
	c.CaRotation = &api.CARotation{
		Phase:        api.CARotation_PHASE_TRUST,
		NewCaCertPem: certPEM,
		NewCaKeyPem:  keyPEM,
		StartedAt:    timestamppb.New(now),
		External:     external,
	}
	return nil
}

// goal is what a node must report to have done the current phase: the
// fingerprint of the bundle it trusts and, during REISSUE, of the CA its
// certificate was issued by.
type goal struct {
	trust, certCA string
}

func goalOf(c *api.Cluster) (goal, error) {
	trust, err := ca.BundleFingerprint(Bundle(c))
	if err != nil {
		return goal{}, err
	}
	g := goal{trust: trust}
	if c.GetCaRotation().GetPhase() != api.CARotation_PHASE_TRUST {
		if g.certCA, err = token.Fingerprint(c.CaCertPem); err != nil {
			return goal{}, err
		}
	}
	return g, nil
}

func (g goal) doneBy(n *api.Node) bool {
	return n.TrustFingerprint == g.trust && (g.certCA == "" || n.CertCaFingerprint == g.certCA)
}

// Record sets what node n reported (the bundle it trusts, the CA of its
// certificate) and reports whether that changed n. Empty reports are
// not recorded: a node that says nothing has not moved.
func Record(n *api.Node, trust, certCA string) bool {
	changed := false
	if trust != "" && trust != n.TrustFingerprint {
		n.TrustFingerprint, changed = trust, true
	}
	if certCA != "" && certCA != n.CertCaFingerprint {
		n.CertCaFingerprint, changed = certCA, true
	}
	return changed
}

// Advance moves the rotation of c on when every node of nodes has done
// its phase, and reports whether it did; c is changed in place. After
// TRUST the new CA signs; after REISSUE the old one is dropped from the
// bundle; after DROP the rotation is over.
func Advance(c *api.Cluster, nodes []*api.Node) (bool, error) {
	r := c.GetCaRotation()
	if r == nil {
		return false, nil
	}
	g, err := goalOf(c)
	if err != nil {
		return false, fmt.Errorf("CA rotation: %w", err)
	}
	for _, n := range nodes {
		if !g.doneBy(n) {
			return false, nil
		}
	}
	switch r.Phase {
	case api.CARotation_PHASE_TRUST:
		c.CaRotation = &api.CARotation{
			Phase: api.CARotation_PHASE_REISSUE, OldCaCertPem: c.CaCertPem,
			StartedAt: r.StartedAt, External: r.External,
		}
		c.CaCertPem, c.CaKeyPem = r.NewCaCertPem, r.NewCaKeyPem
	case api.CARotation_PHASE_REISSUE:
		r = proto.CloneOf(r)
		r.Phase = api.CARotation_PHASE_DROP
		c.CaRotation = r
	default:
		c.CaRotation = nil
	}
	return true, nil
}

// Progress describes the rotation of c over nodes; nil when none is
// under way.
func Progress(c *api.Cluster, nodes []*api.Node) *api.CARotationProgress {
	r := c.GetCaRotation()
	if r == nil {
		return nil
	}
	p := &api.CARotationProgress{Nodes: uint32(len(nodes)), StartedAt: r.StartedAt}
	newCA := r.NewCaCertPem
	switch r.Phase {
	case api.CARotation_PHASE_TRUST:
		p.Phase = "trust"
	case api.CARotation_PHASE_REISSUE:
		p.Phase, newCA = "reissue", c.CaCertPem
	default:
		p.Phase, newCA = "drop", c.CaCertPem
	}
	p.NewCaFingerprint, _ = token.Fingerprint(newCA)
	g, err := goalOf(c)
	if err != nil {
		return p
	}
	for _, n := range nodes {
		if g.doneBy(n) {
			p.Done++
		} else {
			p.Waiting = append(p.Waiting, n.Hostname)
		}
	}
	slices.Sort(p.Waiting)
	return p
}
