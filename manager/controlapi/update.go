package controlapi

import (
	"context"

	"github.com/jaco-project/jaco/manager/state/store"
)

// maxWriteConflicts bounds how often one operator request is read and
// written again after losing a race to another write of the same object.
const maxWriteConflicts = 8

// update runs fn through the store, again on the fresh state when a
// concurrent write to the same object committed first (a node's heartbeat
// status, a replica's progress from the dispatcher): an operator request
// states an intent, not a version. A request that does carry a version
// checks it inside fn and fails with its own version_conflict status,
// which is not retried.
func (s *Server) update(ctx context.Context, fn func(tx *store.Tx) error) error {
	return s.store.UpdateRetrying(ctx, maxWriteConflicts, fn)
}
