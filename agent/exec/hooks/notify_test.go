package hooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/agent/health"
	"github.com/jaco-project/jaco/api"
)

// testNotifyEnv makes the test binary send its arguments, one per line,
// as one datagram to $NOTIFY_SOCKET, as sd_notify(3) does (see TestMain):
// launch scripts need no sd_notify tool on the machine.
const testNotifyEnv = "JACO_HOOKS_TEST_NOTIFY"

func sendNotify(args []string) int {
	addr := &net.UnixAddr{Name: os.Getenv(exec.EnvSystemdNotifySocket), Net: "unixgram"}
	conn, err := net.DialUnix("unixgram", nil, addr)
	if err == nil {
		_, err = conn.Write([]byte(strings.Join(args, "\n")))
		conn.Close()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "notify: %v\n", err)
		return 1
	}
	return 0
}

// notifyLaunch says where its sockets are, READY=1 with a STATUS= after a
// second, then WATCHDOG=1 every 200ms until $GATE exists, then nothing.
const notifyLaunch = `#!/bin/sh
notify() { env JACO_HOOKS_TEST_NOTIFY=1 GORACE=atexit_sleep_ms=0 "$SENDER" "$@"; }
echo "sockets $JACO_NOTIFY_SOCKET $NOTIFY_SOCKET"
sleep 1
notify READY=1 "STATUS=serving"
while [ ! -e "$GATE" ]; do notify WATCHDOG=1; sleep 0.2; done
echo silent
while :; do sleep 0.1; done
`

// watched is a health check running over a controller, as the agent
// runs it.
type watched struct {
	mu       sync.Mutex
	healthy  time.Time
	statuses []string
	done     chan error
	cancel   context.CancelFunc
}

func watch(t *testing.T, c exec.Controller, hc *api.HealthCheck) *watched {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watched{done: make(chan error, 1), cancel: cancel}
	go func() {
		w.done <- health.RunWatch(ctx, hc, c, health.Watch{
			Healthy: func() {
				w.mu.Lock()
				defer w.mu.Unlock()
				if w.healthy.IsZero() {
					w.healthy = time.Now()
				}
			},
			Status: func(s string) {
				w.mu.Lock()
				defer w.mu.Unlock()
				w.statuses = append(w.statuses, s)
			},
		})
	}()
	t.Cleanup(cancel)
	return w
}

func (w *watched) healthySince() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.healthy
}

func (w *watched) status() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.statuses...)
}

// waitHealthy waits for the check to call Healthy, failing if it ends.
func (w *watched) waitHealthy(t *testing.T) time.Time {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if at := w.healthySince(); !at.IsZero() {
			return at
		}
		select {
		case err := <-w.done:
			t.Fatalf("check ended before healthy: %v", err)
		case <-deadline:
			t.Fatal("never healthy")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// stillRunning fails if the check ended within d.
func (w *watched) stillRunning(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case err := <-w.done:
		t.Fatalf("check ended while the replica kept sending WATCHDOG=1: %v", err)
	case <-time.After(d):
	}
}

// TestNotifyCheckOverTheSocket: launch's messages on its notify socket
// drive the health check: READY=1 late is not healthy before, WATCHDOG=1
// keeps it healthy, also through an agent restart (a new runtime binds
// the socket again), and silence is unhealthy. Remove leaves no socket.
func TestNotifyCheckOverTheSocket(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(t.TempDir(), "go")
	hc := &api.HealthCheck{
		Test:     &api.HealthCheck_Notify{Notify: &api.NotifyCheck{}},
		Interval: durationpb.New(500 * time.Millisecond), Retries: 3,
	}
	rep := newReplica(t, map[string]string{"launch": notifyLaunch}, func(s *api.ServiceSpec) {
		s.Env = []string{"GATE=" + gate, "SENDER=" + self}
		s.Health = hc
	})
	sock := filepath.Join(rep.Dir, notifySocketFile)
	c := controllerFor(t, newRuntime(t), rep)
	prepareAndStart(t, c)
	started := time.Now()
	waitLog(t, rep, "sockets "+sock+" "+sock)

	w := watch(t, c, hc)
	time.Sleep(700 * time.Millisecond)
	if !w.healthySince().IsZero() {
		t.Fatal("healthy before launch said READY=1")
	}
	if at := w.waitHealthy(t); at.Sub(started) < 700*time.Millisecond {
		t.Fatalf("healthy %v after start; launch says READY=1 after 1s", at.Sub(started))
	}
	w.stillRunning(t, 2*time.Second) // 4 intervals, more than retries
	if got := w.status(); len(got) != 1 || got[0] != "serving" {
		t.Fatalf("statuses %q, want [serving]", got)
	}

	// jacod exits: nobody reads the socket. A new one adopts the replica,
	// binds the socket again and hears the watchdog again.
	w.cancel()
	if err := <-w.done; !errors.Is(err, context.Canceled) {
		t.Fatalf("check after its context ended: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	c2 := controllerFor(t, newRuntime(t), rep)
	if err := c2.Start(testContext(t)); !errors.Is(err, exec.ErrAlreadyStarted) {
		t.Fatalf("Start after restart = %v, want ErrAlreadyStarted", err)
	}
	w2 := watch(t, c2, hc)
	w2.waitHealthy(t) // READY=1 is remembered: launch says it once
	w2.stillRunning(t, 2*time.Second)

	// launch goes silent: unhealthy after retries intervals.
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitLog(t, rep, "silent")
	select {
	case err := <-w2.done:
		if !errors.Is(err, health.ErrUnhealthy) || !strings.Contains(err.Error(), "no WATCHDOG=1") {
			t.Fatalf("check after launch went silent = %v, want unhealthy", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a silent launch stayed healthy")
	}

	ctx := testContext(t)
	if err := c2.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	waitExit(t, c2)
	if err := c2.Remove(ctx); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	for _, name := range []string{notifySocketFile, notifyReadyFile} {
		if fileExists(filepath.Join(rep.Dir, name)) {
			t.Errorf("%s left after Remove", name)
		}
	}
}

// TestNoNotifySocketWithoutNotifyCheck: a replica without a notify check
// gets no socket and no variable naming one.
func TestNoNotifySocketWithoutNotifyCheck(t *testing.T) {
	launch := "#!/bin/sh\necho \"sockets[$JACO_NOTIFY_SOCKET][$NOTIFY_SOCKET]\"\n"
	rep := newReplica(t, map[string]string{"launch": launch}, nil)
	c := controllerFor(t, newRuntime(t), rep)
	prepareAndStart(t, c)
	waitExit(t, c)
	if log := readLog(t, rep); !strings.Contains(log, "sockets[][]") {
		t.Fatalf("launch saw a notify socket:\n%s", log)
	}
	if fileExists(filepath.Join(rep.Dir, notifySocketFile)) {
		t.Fatal("a notify socket without a notify check")
	}
	if _, err := c.(exec.Notifier).Notifications(testContext(t)); err == nil {
		t.Fatal("Notifications without a notify check succeeded")
	}
}
