package apierror

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/jointoken"
	"github.com/jaco-project/jaco/manager/state/raft"
	"github.com/jaco-project/jaco/manager/state/store"
)

// TestToStatus pins the code and reason word a client sees for each error
// of the state layers, wrapped with context as the servers wrap them: the
// CLI retries on no_leader and prints the reason word, so a sentinel that
// fell through to Internal would turn a retryable failure into a fatal one,
// and a write that may have been applied must never read as no_leader (a
// retry of it answers version_conflict for a change that was made).
func TestToStatus(t *testing.T) {
	for _, tc := range []struct {
		err    error
		code   codes.Code
		reason string
	}{
		{raft.ErrNotLeader, codes.Unavailable, reason.NoLeader},
		{raft.ErrStopped, codes.Unavailable, reason.NoLeader},
		{raft.ErrLostLeadership, codes.Unavailable, reason.OutcomeUnknown},
		{raft.ErrOutcomeUnknown, codes.Unavailable, reason.OutcomeUnknown},
		// A stop while a proposal waited is both ErrStopped and
		// ErrOutcomeUnknown: the ambiguity wins.
		{fmt.Errorf("%w while the write waited to commit: %w", raft.ErrStopped, raft.ErrOutcomeUnknown), codes.Unavailable, reason.OutcomeUnknown},
		{jointoken.ErrInvalid, codes.PermissionDenied, reason.TokenInvalid},
		{jointoken.ErrExpired, codes.PermissionDenied, reason.TokenExpired},
		{jointoken.ErrConsumed, codes.PermissionDenied, reason.TokenConsumed},
		{jointoken.ErrBadRequest, codes.InvalidArgument, reason.InvalidSpec},
		{store.ErrVersionConflict, codes.Aborted, reason.VersionConflict},
		{store.ErrNotFound, codes.NotFound, reason.NotFound},
		{store.ErrExists, codes.InvalidArgument, reason.InvalidSpec},
		{store.ErrInvalid, codes.InvalidArgument, reason.InvalidSpec},
		{errors.New("disk on fire"), codes.Internal, ""},
	} {
		err := ToStatus(fmt.Errorf("update service web: %w", tc.err))
		if got := status.Code(err); got != tc.code {
			t.Errorf("ToStatus(%v): code %v, want %v", tc.err, got, tc.code)
		}
		if got := reason.Of(err); got != tc.reason {
			t.Errorf("ToStatus(%v): reason %q, want %q", tc.err, got, tc.reason)
		}
		if st, _ := status.FromError(err); st.Message() != "update service web: "+tc.err.Error() {
			t.Errorf("ToStatus(%v): message %q lost the context", tc.err, st.Message())
		}
	}
}

// TestToStatusKeepsStatus: a status chosen closer to the cause (a
// validation message with its own reason) is not overwritten.
func TestToStatusKeepsStatus(t *testing.T) {
	orig := reason.Error(codes.FailedPrecondition, reason.NodeHostsPinnedReplicas, "node hosts pinned replicas")
	if err := ToStatus(orig); err != orig {
		t.Errorf("ToStatus(status) = %v, want it unchanged", err)
	}
	if err := ToStatus(nil); err != nil {
		t.Errorf("ToStatus(nil) = %v, want nil", err)
	}
}
