// Package apierror turns the errors the manager's state layers return —
// the store's, raft's and the join tokens' sentinels — into the gRPC
// statuses with reason words that clients act on. It is a leaf: the
// Control API, the dispatcher, membership and backup all answer with it,
// and none of them may import another (see internal/importrules), so the
// mapping cannot live in any one of them.
package apierror

import (
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/jointoken"
	"github.com/jaco-project/jaco/manager/state/raft"
	"github.com/jaco-project/jaco/manager/state/store"
)

// ToStatus turns an error from the store or raft into a gRPC status with
// its reason word. Errors already carrying a status pass through.
func ToStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, raft.ErrOutcomeUnknown):
		// First: a stop while waiting is ErrStopped too, and must not
		// read as the retryable no_leader. Unavailable, as etcd answers a
		// proposal its leader lost; the reason word says not to retry.
		return reason.Error(codes.Unavailable, reason.OutcomeUnknown, "%v", err)
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrStopped):
		return reason.Error(codes.Unavailable, reason.NoLeader, "%v", err)
	case errors.Is(err, jointoken.ErrInvalid):
		return reason.Error(codes.PermissionDenied, reason.TokenInvalid, "%v", err)
	case errors.Is(err, jointoken.ErrExpired):
		return reason.Error(codes.PermissionDenied, reason.TokenExpired, "%v", err)
	case errors.Is(err, jointoken.ErrConsumed):
		return reason.Error(codes.PermissionDenied, reason.TokenConsumed, "%v", err)
	case errors.Is(err, store.ErrVersionConflict):
		return reason.Error(codes.Aborted, reason.VersionConflict, "%v", err)
	case errors.Is(err, store.ErrNotFound):
		return reason.Error(codes.NotFound, reason.NotFound, "%v", err)
	case errors.Is(err, store.ErrExists), errors.Is(err, store.ErrInvalid), errors.Is(err, jointoken.ErrBadRequest):
		return reason.Error(codes.InvalidArgument, reason.InvalidSpec, "%v", err)
	}
	return status.Error(codes.Internal, err.Error())
}
