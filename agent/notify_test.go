package agent

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// notifyRuntime is a fake hooks runtime whose controllers are
// exec.Notifiers: the test sends what the replicas say.
type notifyRuntime struct {
	*fakeRuntime
	mu   sync.Mutex
	msgs map[string]chan exec.Notification
}

func newNotifyRuntime() *notifyRuntime {
	return &notifyRuntime{fakeRuntime: newFakeRuntime(exec.RuntimeHooks), msgs: map[string]chan exec.Notification{}}
}

func (n *notifyRuntime) Controller(r exec.Replica) (exec.Controller, error) {
	c, err := n.fakeRuntime.Controller(r)
	if err != nil {
		return nil, err
	}
	return &notifyController{fakeController: c.(*fakeController), rt: n}, nil
}

func (n *notifyRuntime) channel(id string) chan exec.Notification {
	n.mu.Lock()
	defer n.mu.Unlock()
	ch := n.msgs[id]
	if ch == nil {
		ch = make(chan exec.Notification)
		n.msgs[id] = ch
	}
	return ch
}

// say sends m as replica id's message, failing when the agent does not
// take it.
func (n *notifyRuntime) say(t *testing.T, id string, m exec.Notification) {
	t.Helper()
	select {
	case n.channel(id) <- m:
	case <-time.After(5 * time.Second):
		t.Fatalf("the agent does not read %s's notifications", id)
	}
}

type notifyController struct {
	*fakeController
	rt *notifyRuntime
}

func (c *notifyController) Notifications(ctx context.Context) (<-chan exec.Notification, error) {
	c.rt.enter(ctx, "notifications", c.id)
	in := c.rt.channel(c.id)
	out := make(chan exec.Notification)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case m := <-in:
				select {
				case out <- m:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

func notifyTask(id string) *api.Task {
	t := imageTask(id)
	t.Spec = &api.ServiceSpec{
		Name:   "proc",
		Bundle: &api.HookBundle{Files: map[string][]byte{"launch": []byte("#!/bin/sh\n")}},
		Health: &api.HealthCheck{
			Test:     &api.HealthCheck_Notify{Notify: &api.NotifyCheck{}},
			Interval: durationpb.New(100 * time.Millisecond), Retries: 3,
		},
	}
	return t
}

func messageIs(d *fakeDispatcher, id string, state api.TaskState, message string) func() (bool, string) {
	return func() (bool, string) {
		st := d.last(id)
		return st.GetState() == state && st.GetMessage() == message, fmt.Sprint(st)
	}
}

// TestNotifyCheck: a replica with a notify check is STARTING until it
// says READY=1, RUNNING while WATCHDOG=1 keeps coming, its STATUS= is its
// status message, and once silent it is stopped and FAILED unhealthy (the
// orchestrator replaces it, as after any failed health check).
func TestNotifyCheck(t *testing.T) {
	d := newFakeDispatcher(t)
	rt := newNotifyRuntime()
	startAgent(t, testConfig(t.TempDir(), []string{d.addr}, rt))
	waitfor.Holds(t, 10*time.Second, "a session", d.sessionsReach(1))
	d.assign(notifyTask("t1"))

	waitfor.Holds(t, 10*time.Second, "the check listening", calls(rt.fakeRuntime, "notifications t1", 1))
	rt.say(t, "t1", exec.Notification{Status: "loading data", Watchdog: true})
	waitfor.Holds(t, 10*time.Second, "STARTING with the replica's status", messageIs(d, "t1", starting, "loading data"))
	time.Sleep(400 * time.Millisecond) // past interval × retries: no READY=1, no limit
	if d.sawState("t1", running) || d.sawState("t1", failedSt) {
		t.Fatalf("states %v before READY=1, want STARTING only", d.states("t1"))
	}

	rt.say(t, "t1", exec.Notification{Ready: true})
	waitfor.Holds(t, 10*time.Second, "RUNNING", messageIs(d, "t1", running, "loading data"))
	rt.say(t, "t1", exec.Notification{Status: "serving"})
	waitfor.Holds(t, 10*time.Second, "RUNNING with the new status", messageIs(d, "t1", running, "serving"))
	for range 20 { // 1 s of WATCHDOG=1 every 50ms
		rt.say(t, "t1", exec.Notification{Watchdog: true})
		time.Sleep(50 * time.Millisecond)
	}
	if st := d.last("t1"); st.GetState() != running {
		t.Fatalf("status %v while WATCHDOG=1 kept coming, want RUNNING", st)
	}

	waitfor.Holds(t, 10*time.Second, "FAILED once silent", d.lastIs("t1", failedSt))
	if st := d.last("t1"); st.GetReason() != ReasonUnhealthy || rt.count("stop t1") != 1 || rt.isRunning("t1") {
		t.Fatalf("status %v, calls %v: want unhealthy and stopped once", st, rt.callLog())
	}
}
