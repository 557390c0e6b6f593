package controlapi

import (
	"context"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/apierror"
	"github.com/jaco-project/jaco/manager/jointoken"
)

// IssueJoinToken mints a single-use join token; only its hash is stored.
func (s *Server) IssueJoinToken(ctx context.Context, req *api.IssueJoinTokenRequest) (*api.IssueJoinTokenResponse, error) {
	ttl := jointoken.DefaultTTL
	if req.Ttl != nil {
		ttl = req.Ttl.AsDuration()
	}
	text, jt, err := jointoken.Issue(ctx, s.store, req.Role, ttl, time.Now())
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	return &api.IssueJoinTokenResponse{Token: text, ExpiresAt: jt.ExpiresAt}, nil
}
