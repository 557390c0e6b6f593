package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/agent/health"
	"github.com/jaco-project/jaco/agent/logs"
	"github.com/jaco-project/jaco/api"
)

// runToEnd takes the replica from where it is to a terminal state, or
// returns early when ctx ends (the agent stops; the replica keeps running).
func (r *taskRunner) runToEnd(ctx context.Context, ctl exec.Controller) {
	if r.startAndMonitor(ctx, ctl) || ctx.Err() != nil {
		return
	}
	// The replica must stop (desired state past RUNNING, or removal).
	message := "stopped as asked"
	if r.state() >= api.TaskState_TASK_STATE_STARTING {
		err := ctl.Stop(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil && !errors.Is(err, exec.ErrNotFound) {
			r.w.log.Warn("stop replica", "task_id", r.id, "err", err)
			message = fmt.Sprintf("stopped as asked: %v", err)
		}
	}
	r.report(newStatus(api.TaskState_TASK_STATE_SHUTDOWN, message))
}

// startAndMonitor prepares and starts the replica unless that is done
// already (a replica that was started before is adopted), then watches
// it. It returns true once the replica reached a terminal state, false
// when it must be stopped or ctx ended.
func (r *taskRunner) startAndMonitor(ctx context.Context, ctl exec.Controller) bool {
	if r.state() < api.TaskState_TASK_STATE_STARTING && !r.waitNotBefore(ctx) {
		return false
	}
	ended, started := r.prepareAndStart(ctx, ctl)
	if !started {
		return ended
	}
	return r.monitor(ctx, ctl)
}

// prepareAndStart holds one of the node's start slots while it prepares
// and starts the replica: a hundred replicas started at once on a small
// node all finish late (each waits on the others' CNI and runc work),
// while a bounded number in flight get the first ones running sooner for
// the same total. ended: the replica reached a terminal state; started:
// it runs (or was adopted).
func (r *taskRunner) prepareAndStart(ctx context.Context, ctl exec.Controller) (ended, started bool) {
	select {
	case r.w.starts <- struct{}{}:
	case <-r.stopWanted:
		return false, false
	case <-ctx.Done():
		return false, false
	}
	defer func() { <-r.w.starts }()
	// The controller exists, so the spec names a runtime.
	runtime, _ := runtimeFor(r.snapshot().GetSpec())
	if r.state() < api.TaskState_TASK_STATE_STARTING {
		r.report(newStatus(api.TaskState_TASK_STATE_PREPARING, "preparing"))
		began := time.Now()
		if err := r.step(ctx, ctl.Prepare); err != nil {
			if r.interrupted(ctx) {
				return false, false
			}
			reason := prepareReason(err)
			r.w.metrics.prepareFailed.WithLabelValues(reason).Inc()
			r.report(failed(reason, "prepare: %v", err))
			return true, false
		}
		r.w.metrics.prepare.WithLabelValues(runtime).Observe(since(began))
	}
	if r.interrupted(ctx) {
		return false, false
	}
	r.report(newStatus(api.TaskState_TASK_STATE_STARTING, "starting"))
	began := time.Now()
	err := r.step(ctx, ctl.Start)
	switch {
	case errors.Is(err, exec.ErrAlreadyStarted):
		r.w.log.Info("replica already running: adopted", "task_id", r.id)
	case err != nil:
		if r.interrupted(ctx) {
			return false, false
		}
		r.report(failed(ReasonStartFailed, "start: %v", err))
		return true, false
	default:
		r.w.metrics.start.WithLabelValues(runtime).Observe(since(began))
	}
	return false, true
}

// interrupted says whether the runner must leave what it is doing.
func (r *taskRunner) interrupted(ctx context.Context) bool {
	select {
	case <-r.stopWanted:
		return true
	default:
		return ctx.Err() != nil
	}
}

// step runs fn with a context that also ends when the replica must stop,
// so a long prepare (an image pull) does not hold up a shutdown.
func (r *taskRunner) step(ctx context.Context, fn func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-r.stopWanted:
			cancel()
		case <-done:
		}
	}()
	return fn(ctx)
}

// waitNotBefore waits for the task's not_before; false when the replica
// must stop or ctx ends first.
func (r *taskRunner) waitNotBefore(ctx context.Context) bool {
	var d time.Duration
	if nb := r.snapshot().GetNotBefore(); nb != nil {
		d = time.Until(nb.AsTime())
	}
	if d <= 0 {
		return !r.interrupted(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.stopWanted:
		return false
	case <-ctx.Done():
		return false
	}
}

type waitResult struct {
	exit exec.Exit
	err  error
}

// monitor watches a started replica: its exit, and its health when the
// spec has a check. It reports RUNNING (at once without a check, once
// healthy with one) and returns true when the replica ended (reported),
// false when it must stop or ctx ended.
func (r *taskRunner) monitor(ctx context.Context, ctl exec.Controller) bool {
	mctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	exited := make(chan waitResult, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		exit, err := r.wait(mctx, ctl)
		exited <- waitResult{exit, err}
	}()

	var unhealthy chan error
	healthy := make(chan struct{}, 1)
	// statusText holds the latest STATUS= text of a notify check not yet
	// taken (one producer: drain, then the send cannot block).
	statusText := make(chan string, 1)
	runningMessage := "running, healthy"
	if hc := r.snapshot().GetSpec().GetHealth(); hc != nil {
		if hc.GetNotify() != nil {
			runningMessage = "running, ready"
		}
		unhealthy = make(chan error, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			unhealthy <- health.RunWatch(mctx, hc, ctl, health.Watch{
				Healthy: func() {
					select {
					case healthy <- struct{}{}:
					default:
					}
				},
				Status: func(text string) {
					select {
					case <-statusText:
					default:
					}
					statusText <- text
				},
			})
		}()
	} else {
		r.report(r.running(ctx, ctl, "running"))
	}

	for {
		select {
		case <-ctx.Done():
			return false
		case <-r.stopWanted:
			return false
		case text := <-statusText:
			// The replica's own words are its status message from now on.
			runningMessage = text
			r.amend(text)
		case <-healthy:
			r.report(r.running(ctx, ctl, runningMessage))
		case err := <-unhealthy:
			if ctx.Err() != nil {
				return false
			}
			r.w.log.Warn("replica unhealthy: stopping it", "task_id", r.id, "err", err)
			if serr := ctl.Stop(ctx); serr != nil && ctx.Err() == nil {
				r.w.log.Warn("stop unhealthy replica", "task_id", r.id, "err", serr)
			}
			if ctx.Err() != nil {
				return false
			}
			r.report(failed(ReasonUnhealthy, "%v", err))
			return true
		case res := <-exited:
			if ctx.Err() != nil {
				return false
			}
			r.report(exitStatus(res))
			return true
		}
	}
}

// wait follows the replica until it ends. A runtime error other than
// "not found" (containerd restarting, say) is retried: the replica may
// well still be running, and reporting it failed would get it replaced.
func (r *taskRunner) wait(ctx context.Context, ctl exec.Controller) (exec.Exit, error) {
	for attempt := 0; ; attempt++ {
		exit, err := ctl.Wait(ctx)
		if err == nil || errors.Is(err, exec.ErrNotFound) || ctx.Err() != nil {
			return exit, err
		}
		r.w.log.Warn("wait for replica", "task_id", r.id, "err", err)
		if !r.w.cfg.pause(ctx, attempt) {
			return exit, ctx.Err()
		}
	}
}

func exitStatus(res waitResult) *api.TaskStatus {
	if res.err != nil {
		return failed(ReasonReplicaLost, "the runtime lost the replica: %v", res.err)
	}
	exit := res.exit
	if exit.Code == 0 && exit.Signal == "" {
		return newStatus(api.TaskState_TASK_STATE_COMPLETE, "exited with code 0")
	}
	st := failed(ReasonExitCode, "exited with code %d", exit.Code)
	if exit.Signal != "" {
		st.Message = "killed by " + exit.Signal
	}
	st.ExitCode = int32(exit.Code)
	return st
}

// cleanup removes the replica from the node, then forgets it. Its log is
// kept, among the last few of its slot (agent/logs Retire).
func (r *taskRunner) cleanup(ctx context.Context, ctl exec.Controller, col *logs.Collector) {
	if ctl != nil {
		for attempt := 0; ; attempt++ {
			err := ctl.Remove(ctx)
			if err == nil || errors.Is(err, exec.ErrNotFound) {
				break
			}
			if ctx.Err() != nil {
				return
			}
			r.w.log.Warn("remove replica", "task_id", r.id, "err", err)
			if !r.w.cfg.pause(ctx, attempt) {
				return
			}
		}
	}
	cfg := r.w.cfg
	if validTaskID(r.id) == nil {
		if err := os.RemoveAll(cfg.replicaDir(r.id)); err != nil {
			r.w.log.Warn("remove replica dir", "task_id", r.id, "err", err)
		}
		if col != nil {
			col.Finish()
		}
		if err := os.Remove(LogPath(cfg.Dir, r.id)); err != nil && !errors.Is(err, os.ErrNotExist) {
			r.w.log.Warn("remove replica log", "task_id", r.id, "err", err)
		}
		t := r.snapshot()
		if err := r.w.logs.Retire(r.id, t.GetServiceId(), t.GetSlot()); err != nil {
			r.w.log.Warn("keep ended replica's log", "task_id", r.id, "err", err)
		}
	}
	r.mu.Lock()
	err := r.w.db.DeleteTask(r.id)
	r.mu.Unlock()
	if err != nil {
		r.w.log.Error("forget task in agent db", "task_id", r.id, "err", err)
	}
	r.w.statuses.Drop(r.id)
	r.w.forget(r)
	r.w.log.Info("replica removed", "task_id", r.id)
}

// running is the RUNNING status, with the replica's addresses on its
// networks: service discovery answers with them (docs/adr/0026). A
// runtime that cannot say them leaves the replica out of discovery, not
// down.
func (r *taskRunner) running(ctx context.Context, ctl exec.Controller, message string) *api.TaskStatus {
	st := newStatus(api.TaskState_TASK_STATE_RUNNING, message)
	nw, ok := ctl.(exec.Networked)
	if !ok {
		return st
	}
	addrs, err := nw.NetworkAddresses(ctx)
	if err != nil {
		r.w.log.Warn("replica's network addresses unknown; it is left out of service discovery", "task_id", r.id, "err", err)
		return st
	}
	for _, a := range addrs {
		st.Addresses = append(st.Addresses, &api.NetworkAddress{NetworkId: a.NetworkID, Address: a.Addr.String()})
	}
	return st
}
