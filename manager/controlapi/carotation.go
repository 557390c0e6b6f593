package controlapi

import (
	"bytes"
	"context"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/manager/apierror"
	"github.com/jaco-project/jaco/manager/carotation"
	"github.com/jaco-project/jaco/manager/state/store"
)

// RotateCA starts a rotation of the cluster CA to a new one, made here or
// given (docs/adr/0041). It returns once the rotation is recorded; the
// nodes carry it out as they poll, and `cluster status` follows it. A CA
// the operator brings is checked first: not a usable CA → ca_invalid,
// and nothing changed.
func (s *Server) RotateCA(ctx context.Context, req *api.RotateCARequest) (*api.RotateCAResponse, error) {
	certPEM, keyPEM := req.CaCertPem, req.CaKeyPem
	external := len(certPEM) > 0 || len(keyPEM) > 0
	if external {
		if len(certPEM) == 0 || len(keyPEM) == 0 {
			return nil, reason.Error(codes.InvalidArgument, reason.CAInvalid, "an external CA needs both its certificate and its key")
		}
		if err := ca.CheckCA(certPEM, keyPEM, time.Now()); err != nil {
			return nil, reason.Error(codes.InvalidArgument, reason.CAInvalid, "%v", err)
		}
	}
	var resp *api.RotateCAResponse
	err := s.update(ctx, func(tx *store.Tx) error {
		c := tx.Cluster()
		if c == nil {
			return reason.Error(codes.FailedPrecondition, reason.ClusterUninitialized, "the cluster object is missing")
		}
		if c.CaRotation != nil {
			return reason.Error(codes.FailedPrecondition, reason.CARotationInProgress,
				"a CA rotation is already under way (%s): 'jaco cluster status' shows how far it got", enumword.Of(c.CaRotation.GetPhase()))
		}
		newCert, newKey := certPEM, keyPEM
		if !external {
			var err error
			if newCert, newKey, err = ca.NewRootCA(c.Id); err != nil {
				return err
			}
		} else if bytes.Equal(bytes.TrimSpace(newCert), bytes.TrimSpace(c.CaCertPem)) {
			return reason.Error(codes.InvalidArgument, reason.CAInvalid, "that is the cluster's CA already")
		}
		if err := carotation.Begin(c, newCert, newKey, external, time.Now()); err != nil {
			return err // ErrInProgress was refused above
		}
		resp = &api.RotateCAResponse{Progress: carotation.Progress(c, tx.ListNodes())}
		return tx.Update(c)
	})
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	return resp, nil
}
