package node

import (
	"context"
	"log/slog"
	"sync"

	"github.com/jaco-project/jaco/agent/volumes"
	"github.com/jaco-project/jaco/api"
)

// volumeSweeper deletes the directories of volumes removed from the
// cluster (docs/adr/0061-volumes.md). The agent hands it the node's
// removed_volumes with every session message and must not block, while a
// volume's directory may take long to delete: one goroutine at a time
// works through the latest list it was given.
type volumeSweeper struct {
	ctx context.Context
	wg  *sync.WaitGroup
	dir volumes.Dir
	log *slog.Logger

	mu      sync.Mutex
	running bool
	next    []*api.VolumeRef // the latest list, while a sweep runs
}

func newVolumeSweeper(ctx context.Context, wg *sync.WaitGroup, dir string, log *slog.Logger) *volumeSweeper {
	return &volumeSweeper{ctx: ctx, wg: wg, dir: volumes.Dir(dir), log: log.With("component", "volumes")}
}

// sweep deletes refs' directories, now or once the sweep running ends.
func (s *volumeSweeper) sweep(refs []*api.VolumeRef) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		s.next = refs
		return
	}
	s.running = true
	// Called from the agent's session loop, which n.wg counts: the group
	// is not waited on yet.
	s.wg.Go(func() {
		for {
			if s.ctx.Err() == nil {
				s.dir.Forget(refs, s.log)
			}
			s.mu.Lock()
			if s.next == nil || s.ctx.Err() != nil {
				s.running, s.next = false, nil
				s.mu.Unlock()
				return
			}
			refs, s.next = s.next, nil
			s.mu.Unlock()
		}
	})
}
