package agent

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jaco-project/jaco/agent/exec"
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
	waitFor(t, "a session", d.sessionsReach(1))
	waitFor(t, "the agent in session", inSession(r.agent))
	if n := lost.Load(); n != 0 {
		t.Fatalf("Disconnected called %d times during a session", n)
	}
	addr := d.addr
	d.stop()
	waitFor(t, "Disconnected after the dispatcher went", func() (bool, string) {
		return lost.Load() == 1, fmt.Sprint("calls: ", lost.Load())
	})
	d.start(addr)
	waitFor(t, "a second session", d.sessionsReach(2))
	waitFor(t, "the agent in session again", inSession(r.agent))
	d.expireSession()
	waitFor(t, "Disconnected after the session expired", func() (bool, string) {
		return lost.Load() == 2, fmt.Sprint("calls: ", lost.Load())
	})
	waitFor(t, "a third session", d.sessionsReach(3))
	waitFor(t, "the agent in a third session", inSession(r.agent))
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
