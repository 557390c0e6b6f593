package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/jaco-project/jaco/agent/exec"
)

// fakeRuntime is an exec.Runtime whose replicas are entries in a map: it
// records every call, can hold Prepare or Start until the test lets them
// go, and lets the test end a replica with any exit. One fakeRuntime
// shared by two agents plays replicas that outlive an agent.
type fakeRuntime struct {
	name string

	mu       sync.Mutex
	calls    []string // "prepare t1", "start t1", ...
	replicas map[string]*fakeReplica
	gates    map[string]chan struct{} // "prepare t1" → closed to let it go
	failOp   map[string]error         // "start t1" → error to return
	addrs    map[string][]exec.NetworkAddress
	reps     map[string]exec.Replica // as the agent last described each
}

type fakeReplica struct {
	running bool
	done    chan struct{}
	exit    exec.Exit
}

func newFakeRuntime(name string) *fakeRuntime {
	return &fakeRuntime{name: name, replicas: map[string]*fakeReplica{}, gates: map[string]chan struct{}{}, failOp: map[string]error{},
		addrs: map[string][]exec.NetworkAddress{}, reps: map[string]exec.Replica{}}
}

func (f *fakeRuntime) Name() string { return f.name }

func (f *fakeRuntime) Controller(r exec.Replica) (exec.Controller, error) {
	f.mu.Lock()
	f.reps[r.Task.GetId()] = r
	f.mu.Unlock()
	return &fakeController{rt: f, id: r.Task.GetId(), rep: r}, nil
}

// replica is the replica the agent last made a controller for.
func (f *fakeRuntime) replica(id string) (exec.Replica, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.reps[id]
	return r, ok
}

// hold makes the call "op id" wait until the returned func is called.
func (f *fakeRuntime) hold(op, id string) (release func()) {
	ch := make(chan struct{})
	f.mu.Lock()
	f.gates[op+" "+id] = ch
	f.mu.Unlock()
	return sync.OnceFunc(func() { close(ch) })
}

// fail makes the call "op id" return err.
func (f *fakeRuntime) fail(op, id string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failOp[op+" "+id] = err
}

// end makes the replica id exit.
func (f *fakeRuntime) end(id string, exit exec.Exit) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.replicas[id]; r != nil && r.running {
		r.running, r.exit = false, exit
		close(r.done)
	}
}

func (f *fakeRuntime) isRunning(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.replicas[id]
	return r != nil && r.running
}

func (f *fakeRuntime) count(call string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == call {
			n++
		}
	}
	return n
}

func (f *fakeRuntime) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// enter records the call, waits at its gate, and returns its set error.
func (f *fakeRuntime) enter(ctx context.Context, op, id string) error {
	key := op + " " + id
	f.mu.Lock()
	f.calls = append(f.calls, key)
	gate := f.gates[key]
	err := f.failOp[key]
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

type fakeController struct {
	rt  *fakeRuntime
	id  string
	rep exec.Replica
}

// Prepare refuses a replica lacking a file, as the runtimes do.
func (c *fakeController) Prepare(ctx context.Context) error {
	if err := c.rt.enter(ctx, "prepare", c.id); err != nil {
		return err
	}
	return c.rep.CheckFiles()
}

func (c *fakeController) Start(ctx context.Context) error {
	if err := c.rt.enter(ctx, "start", c.id); err != nil {
		return err
	}
	c.rt.mu.Lock()
	defer c.rt.mu.Unlock()
	if r := c.rt.replicas[c.id]; r != nil && r.running {
		return exec.ErrAlreadyStarted
	}
	c.rt.replicas[c.id] = &fakeReplica{running: true, done: make(chan struct{})}
	return nil
}

func (c *fakeController) Wait(ctx context.Context) (exec.Exit, error) {
	c.rt.mu.Lock()
	r := c.rt.replicas[c.id]
	c.rt.mu.Unlock()
	if r == nil {
		return exec.Exit{}, exec.ErrNotFound
	}
	select {
	case <-r.done:
		c.rt.mu.Lock()
		defer c.rt.mu.Unlock()
		return r.exit, nil
	case <-ctx.Done():
		return exec.Exit{}, ctx.Err()
	}
}

// NetworkAddresses implements exec.Networked: what the test set in addrs.
func (c *fakeController) NetworkAddresses(context.Context) ([]exec.NetworkAddress, error) {
	c.rt.mu.Lock()
	defer c.rt.mu.Unlock()
	return c.rt.addrs[c.id], nil
}

func (c *fakeController) Stop(ctx context.Context) error {
	if err := c.rt.enter(ctx, "stop", c.id); err != nil {
		return err
	}
	c.rt.end(c.id, exec.Exit{Code: 130, Signal: "SIGINT"})
	return nil
}

func (c *fakeController) Remove(ctx context.Context) error {
	if err := c.rt.enter(ctx, "remove", c.id); err != nil {
		return err
	}
	c.rt.mu.Lock()
	defer c.rt.mu.Unlock()
	if r := c.rt.replicas[c.id]; r != nil && r.running {
		return fmt.Errorf("remove %s: still running", c.id)
	}
	delete(c.rt.replicas, c.id)
	return nil
}

func (c *fakeController) Address(context.Context) (string, error) { return "127.0.0.1", nil }

func (c *fakeController) Exec(ctx context.Context, argv []string) (int, error) {
	if err := c.rt.enter(ctx, "exec", c.id); err != nil {
		return -1, err
	}
	if len(argv) == 0 {
		return -1, errors.New("empty argv")
	}
	if argv[0] == "false" {
		return 1, nil
	}
	return 0, nil
}
