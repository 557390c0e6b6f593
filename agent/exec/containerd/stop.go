package containerd

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"

	"github.com/jaco-project/jaco/agent/exec"
)

// killWait bounds how long Stop waits for a task to be reaped after
// SIGKILL (a process in uninterruptible sleep may take a while).
const killWait = 30 * time.Second

// Stop runs the stop ladder (exec.Ladder) on the container's init (PID
// 1), which the kernel spares from signals it has no handler for: a
// replica whose init ignores SIGINT and SIGQUIT takes SIGKILL, and Stop
// then returns an error wrapping exec.ErrFailedToStop.
func (c *controller) Stop(ctx context.Context) error {
	task, err := c.task(ctx)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil
		}
		return err
	}
	// Wait before the first signal so the exit cannot slip by unseen.
	exited, err := task.Wait(ctx)
	if err != nil {
		return fmt.Errorf("replica %s: wait: %w", c.id, err)
	}
	stopGrace, abortGrace := exec.StopGracePeriods(c.rep.Task.GetSpec())
	ladder := exec.Ladder{StopGrace: stopGrace, AbortGrace: abortGrace, KillWait: killWait,
		Log: c.rt.log.With("task_id", c.rep.Task.GetId())}
	if err := ladder.Run(ctx, stoppable{task: task, exited: exited}); err != nil {
		return fmt.Errorf("replica %s: %w", c.id, err)
	}
	return nil
}

// stoppable is a container's task as the ladder drives it.
type stoppable struct {
	task   client.Task
	exited <-chan client.ExitStatus
}

func (s stoppable) Signal(ctx context.Context, sig syscall.Signal) (bool, error) {
	if err := s.task.Kill(ctx, sig); err != nil {
		if errdefs.IsNotFound(err) || errdefs.IsFailedPrecondition(err) {
			return true, nil // ended meanwhile
		}
		return false, err
	}
	return false, nil
}

func (s stoppable) WaitGone(ctx context.Context, d time.Duration) (bool, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.exited:
		return true, nil
	case <-t.C:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}
