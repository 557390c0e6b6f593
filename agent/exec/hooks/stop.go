package hooks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
)

// processes are the replica's recorded shim and launch (zero records when
// missing).
type processes struct{ shim, launch procRecord }

func (c *controller) processes() (processes, error) {
	var p processes
	var err error
	if p.shim, _, err = readProc(c.path(shimFile)); err != nil {
		return p, err
	}
	if p.launch, _, err = readProc(c.path(childFile)); err != nil {
		return p, err
	}
	return p, nil
}

// running reports whether any of them still runs. launch may outlive a
// shim that was killed outright.
func (p processes) running() bool { return p.shim.alive() || p.launch.alive() }

// signal sends a rung's signal (stop is the ladder's first): through the
// shim, which forwards it to the group of the hook it runs, or straight
// to launch's group when the shim is gone. The shim is asked with the
// signals it reads as rungs (forwarder): SIGINT for the stop signal,
// which it turns into the launch spec's (the stop signal itself might
// be SIGTERM, or one that ends the shim), SIGQUIT as it is, and SIGTERM
// for SIGKILL, which it cannot catch.
func (p processes) signal(sig, stop syscall.Signal) error {
	if p.shim.alive() {
		switch {
		case sig == syscall.SIGKILL:
			sig = syscall.SIGTERM
		case sig == stop:
			sig = syscall.SIGINT
		}
		return p.shim.signal(sig)
	}
	return p.launch.signalGroup(sig)
}

// stopSignal is the signal launch was started to stop with: the one in
// its launch spec, which the shim forwards, so that a later jacod stops
// it as the one that started it did. A launch spec that cannot be read
// falls back on the task's spec.
func (c *controller) stopSignal() syscall.Signal {
	var spec launchSpec
	err := readJSON(c.path(launchFile), &spec)
	if err == nil {
		return cmp.Or(spec.StopSignal, syscall.SIGINT)
	}
	// WARN: the replica is still stopped, with the task's stop signal.
	c.log.Warn("read launch spec for its stop signal", "err", err)
	sig, err := stopSignal(c.rep.Task.GetSpec())
	if err != nil {
		c.log.Warn("stop signal of the spec, stopping with SIGINT", "err", err)
	}
	return cmp.Or(sig, syscall.SIGINT)
}

// Stop runs the stop ladder (exec.Ladder) on the replica's shim and
// launch. It returns nil at once when nothing runs. When even SIGKILL did
// not end the shim in time, it kills launch and the shim directly.
func (c *controller) Stop(ctx context.Context) error {
	p, err := c.processes()
	if err != nil || !p.running() {
		return err
	}
	stopGrace, abortGrace := api.StopGracePeriods(c.rep.Task.GetSpec())
	stop := c.stopSignal()
	ladder := exec.Ladder{StopSignal: stop, StopGrace: stopGrace, AbortGrace: abortGrace, KillWait: c.rt.killWait, Log: c.log}
	err = ladder.Run(ctx, stoppable{c: c, p: p, stop: stop})
	if errors.Is(err, exec.ErrStillRunning) {
		c.killDirectly(p)
	}
	return err
}

// stoppable is the replica's processes as the ladder drives them.
type stoppable struct {
	c    *controller
	p    processes
	stop syscall.Signal
}

func (s stoppable) Signal(_ context.Context, sig syscall.Signal) (bool, error) {
	if !s.p.running() {
		return true, nil
	}
	return false, s.p.signal(sig, s.stop)
}

func (s stoppable) WaitGone(ctx context.Context, d time.Duration) (bool, error) {
	return s.c.waitGone(ctx, s.p, d)
}

// waitGone polls until nothing runs (true), or ctx ends. The grace period
// d is for launch: once it passes with launch still running, it returns
// false (next rung). When launch ended but the shim still runs finish or
// records the exit, it gets up to killWait more before the ladder goes on
// (and then signals finish).
func (c *controller) waitGone(ctx context.Context, p processes, d time.Duration) (bool, error) {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(c.rt.pollInterval)
	defer tick.Stop()
	for {
		if !p.running() {
			return true, nil
		}
		now := time.Now()
		if now.After(deadline) && (p.launch.alive() || now.After(deadline.Add(c.rt.killWait))) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("stop: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// killDirectly is the last resort when the shim did not end after being
// asked to kill: SIGKILL launch's group and the shim, and record the exit
// the shim could not.
func (c *controller) killDirectly(p processes) {
	// WARN: handled here; only a kill that fails leaves a process behind.
	c.log.Warn("hook shim did not end after SIGKILL was asked, killing it", "pid", p.shim.Pid)
	if err := p.launch.signalGroup(syscall.SIGKILL); err != nil {
		c.log.Error("kill launch", "err", err)
	}
	if err := p.shim.signal(syscall.SIGKILL); err != nil {
		c.log.Error("kill shim", "err", err)
	}
	if _, ok, _ := readExit(c.rep.Dir); !ok {
		rec := exitRecord{Code: 128 + int(syscall.SIGKILL), Signal: "SIGKILL", At: time.Now().UTC(), StopAsked: true}
		if err := writeJSON(c.path(exitFile), rec); err != nil {
			c.log.Error("record exit", "err", err)
		}
	}
}
