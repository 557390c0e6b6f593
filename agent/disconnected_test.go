package agent

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// Disconnected tells the node each time an open session ends, so that it
// stops trusting the view the session brought; the agent stopping is
// not a lost session.
func TestDisconnectedWhenASessionEnds(t *testing.T) {
	d := newFakeDispatcher(t)
	cfg := testConfig(t.TempDir(), []string{d.addr}, newFakeRuntime(exec.RuntimeContainerd))
	var lost atomic.Int32
	cfg.Disconnected = func() { lost.Add(1) }
	r := startAgent(t, cfg)
	// The dispatcher counts a session before the agent has its first
	// message; only a session the agent opened can be lost.
	waitfor.Holds(t, 10*time.Second, "a session", d.sessionsReach(1))
	waitfor.Holds(t, 10*time.Second, "the agent in session", inSession(r.agent))
	if n := lost.Load(); n != 0 {
		t.Fatalf("Disconnected called %d times during a session", n)
	}
	addr := d.addr
	d.stop()
	waitfor.Holds(t, 10*time.Second, "Disconnected after the dispatcher went", func() (bool, string) {
		return lost.Load() == 1, fmt.Sprint("calls: ", lost.Load())
	})
	d.start(addr)
	waitfor.Holds(t, 10*time.Second, "a second session", d.sessionsReach(2))
	waitfor.Holds(t, 10*time.Second, "the agent in session again", inSession(r.agent))
	d.expireSession()
	waitfor.Holds(t, 10*time.Second, "Disconnected after the session expired", func() (bool, string) {
		return lost.Load() == 2, fmt.Sprint("calls: ", lost.Load())
	})
	waitfor.Holds(t, 10*time.Second, "a third session", d.sessionsReach(3))
	waitfor.Holds(t, 10*time.Second, "the agent in a third session", inSession(r.agent))
	r.stop(t)
	if n := lost.Load(); n != 2 {
		t.Errorf("Disconnected called %d times after the agent stopped, want still 2", n)
	}
}

func inSession(a *Agent) func() (bool, string) {
	return func() (bool, string) {
		in := a.InSession()
		return in, fmt.Sprint("in session: ", in)
	}
}
