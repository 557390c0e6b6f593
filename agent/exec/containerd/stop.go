package containerd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/procopts"
)

// killWait bounds how long Stop waits for a task to be reaped after
// SIGKILL (a process in uninterruptible sleep may take a while).
const killWait = 30 * time.Second

// Stop runs the stop ladder (exec.Ladder) on the container's init (PID
// 1), which the kernel spares from signals it has no handler for: a
// replica whose init ignores its stop signal and SIGQUIT takes SIGKILL,
// and Stop then returns an error wrapping exec.ErrFailedToStop. (A spec
// with init has tini as PID 1, which forwards each signal to the command:
// the command's default actions then apply.)
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
	stopGrace, abortGrace := api.StopGracePeriods(c.rep.Task.GetSpec())
	log := c.rt.log.With("task_id", c.rep.Task.GetId())
	ladder := exec.Ladder{StopSignal: c.stopSignal(ctx, log), StopGrace: stopGrace, AbortGrace: abortGrace,
		KillWait: killWait, Log: log}
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

// stopSignal is the ladder's first signal (docs/adr/0059): the spec's
// stop_signal, else the STOPSIGNAL of the container's image, else 0
// (SIGINT). One that cannot be read is logged and SIGINT is sent: the
// replica must stop all the same (Prepare refuses an unreadable
// stop_signal, so only an image's can be).
func (c *controller) stopSignal(ctx context.Context, log *slog.Logger) syscall.Signal {
	name, from := c.rep.Task.GetSpec().GetStopSignal(), "stop_signal"
	if name == "" {
		var err error
		if name, err = c.imageStopSignal(ctx); err != nil {
			log.WarnContext(ctx, "cannot read the image's stop signal; sending SIGINT", "error", err)
			return 0
		}
		from = "image STOPSIGNAL"
	}
	if name == "" {
		return 0
	}
	sig, err := procopts.Signal(name)
	if err != nil {
		log.WarnContext(ctx, "unreadable stop signal; sending SIGINT", "from", from, "error", err)
		return 0
	}
	return sig
}

// imageStopSignal is the STOPSIGNAL in the config of the container's
// image ("" when it sets none).
func (c *controller) imageStopSignal(ctx context.Context) (string, error) {
	ctr, err := c.rt.client.LoadContainer(ctx, c.id)
	if err != nil {
		return "", fmt.Errorf("replica %s: %w", c.id, err)
	}
	img, err := ctr.Image(ctx)
	if err != nil {
		return "", fmt.Errorf("replica %s: image: %w", c.id, err)
	}
	cfg, err := img.Spec(ctx)
	if err != nil {
		return "", fmt.Errorf("replica %s: image %s: %w", c.id, img.Name(), err)
	}
	return cfg.Config.StopSignal, nil
}
