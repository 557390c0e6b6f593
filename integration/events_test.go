package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// event is what the tests read of a `jaco events --format json` line.
type event struct {
	Sequence    uint64 `json:"sequence"`
	Index       uint64 `json:"index"`
	Type        string `json:"type"`
	Action      string `json:"action"`
	Name        string `json:"name"`
	ServiceName string `json:"service_name"`
	Changes     []struct {
		Field string `json:"field"`
		From  string `json:"from"`
		To    string `json:"to"`
	} `json:"changes"`
}

func (e event) String() string {
	s := fmt.Sprintf("#%d@%d %s %s %s", e.Sequence, e.Index, e.Type, e.Action, e.Name)
	for _, c := range e.Changes {
		s += fmt.Sprintf(" %s %s→%s", c.Field, c.From, c.To)
	}
	return s
}

// eventStream is a running `jaco events --format json`, whose lines are
// collected as they come. The test's cleanup kills it; its reader ends
// with the process's output.
type eventStream struct {
	name   string
	mu     sync.Mutex
	events []event
	bad    []string // lines that are not JSON events
	stderr strings.Builder
}

// startEvents runs `jaco events --format json ARGS` against d's socket.
func startEvents(t *testing.T, d *daemon, args ...string) *eventStream {
	t.Helper()
	s := &eventStream{name: strings.Join(append([]string{"jaco events"}, args...), " ") + " on " + d.name}
	cmd := exec.Command(jacoBin, append([]string{"--data-dir", d.dir, "events", "--format", "json"}, args...)...)
	cmd.Env = testEnv()
	cmd.Stderr = lockedWriter{mu: &s.mu, w: &s.stderr}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", s.name, err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var e event
			err := json.Unmarshal(sc.Bytes(), &e)
			s.mu.Lock()
			if err != nil {
				s.bad = append(s.bad, sc.Text())
			} else {
				s.events = append(s.events, e)
			}
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-read
		_ = cmd.Wait()
		checkNoRace(t, s.name, s.stderrText())
	})
	return s
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (s *eventStream) stderrText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// snapshot is what the stream printed so far; it fails t on a line that
// is not an event.
func (s *eventStream) snapshot(t *testing.T) []event {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bad) > 0 {
		t.Fatalf("%s printed lines that are not JSON events: %q", s.name, s.bad)
	}
	return append([]event(nil), s.events...)
}

// waitFor waits until the stream printed an event that ok accepts.
func (s *eventStream) waitFor(t *testing.T, what string, ok func(event) bool) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		for _, e := range s.snapshot(t) {
			if ok(e) {
				return nil
			}
		}
		return fmt.Errorf("%s has not printed %s yet (stderr %q)", s.name, what, s.stderrText())
	})
}

// serviceEvents are the events of service name, in the stream's order.
func serviceEvents(evs []event, name string) (out []event) {
	for _, e := range evs {
		if e.Type == "service" && e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// wantLifecycle checks that evs, the events of one service, are its
// create, an update scaling it from 1 to 2 replicas, and its remove, in
// that order (the leader's own updates may come between), with rising
// sequence numbers and raft indexes.
func wantLifecycle(t *testing.T, who string, evs []event) {
	t.Helper()
	step := 0
	for i, e := range evs {
		if i > 0 && (e.Sequence <= evs[i-1].Sequence || e.Index < evs[i-1].Index) {
			t.Fatalf("%s: events out of order: %v after %v", who, e, evs[i-1])
		}
		switch {
		case step == 0 && e.Action == "create":
			step = 1
		case step == 1 && e.Action == "update" && len(e.Changes) > 0 && scaled(e):
			step = 2
		case step == 2 && e.Action == "remove":
			if i != len(evs)-1 {
				t.Fatalf("%s: events after the remove: %v", who, evs[i+1:])
			}
			return
		case e.Action == "update":
		default:
			t.Fatalf("%s: unexpected %v at step %d in %v", who, e, step, evs)
		}
	}
	t.Fatalf("%s: service events %v, want create, an update of replicas 1→2, remove", who, evs)
}

func scaled(e event) bool {
	for _, c := range e.Changes {
		if c.Field == "replicas" && c.From == "1" && c.To == "2" {
			return true
		}
	}
	return false
}

// TestEventsFromFollower: `jaco events` on a follower streams a service's
// create, scale and remove in order, with its replicas' events; a second
// stream started afterwards with --since replays them, then follows.
func TestEventsFromFollower(t *testing.T) {
	t.Parallel()
	ms := formManagers(t, 3)
	leader, rest := splitLeader(t, ms)
	live := startEvents(t, rest[0])
	// The stream is live once it shows a write made after it started.
	eventually(t, 30*time.Second, func() error {
		wantOK(t, leader.jaco("node", "update", "--label-add", fmt.Sprintf("probe=%d", time.Now().UnixNano()), rest[0].name))
		for _, e := range live.snapshot(t) {
			if e.Type == "node" && e.Name == rest[0].name {
				return nil
			}
		}
		return fmt.Errorf("%s shows no node update yet (stderr %q)", live.name, live.stderrText())
	})

	out := t.TempDir()
	bundle := writeBundle(t, out, "exec sleep 3600")
	wantOK(t, leader.jaco("service", "create", "-d", "--name", "web", "--replicas", "1", "-e", "OUT="+out, "--bundle", bundle))
	wantOK(t, leader.jaco("service", "scale", "-d", "web=2"))
	wantOK(t, leader.jaco("service", "rm", "web"))
	live.waitFor(t, "web's remove", func(e event) bool { return e.Type == "service" && e.Name == "web" && e.Action == "remove" })

	evs := live.snapshot(t)
	t.Logf("%s: web's events %v", live.name, serviceEvents(evs, "web"))
	wantLifecycle(t, live.name, serviceEvents(evs, "web"))
	tasks := map[string]bool{}
	for _, e := range evs {
		if e.Type == "task" && e.ServiceName == "web" && e.Action == "create" {
			tasks[e.Name] = true
		}
	}
	if !tasks["web.1"] || !tasks["web.2"] {
		t.Fatalf("%s shows task creates %v, want web.1 and web.2", live.name, tasks)
	}

	// Replayed from the other follower's log, which recorded the same
	// changes, then live.
	replay := startEvents(t, rest[1], "--since", "10m")
	replay.waitFor(t, "web's remove, replayed", func(e event) bool { return e.Type == "service" && e.Name == "web" && e.Action == "remove" })
	wantOK(t, leader.jaco("service", "create", "-d", "--name", "after", "-e", "OUT="+out, "--bundle", bundle))
	replay.waitFor(t, "the service created after it started", func(e event) bool { return e.Type == "service" && e.Name == "after" })
	revs := replay.snapshot(t)
	wantLifecycle(t, replay.name, serviceEvents(revs, "web"))
	for i := 1; i < len(revs); i++ {
		if revs[i].Sequence != revs[i-1].Sequence+1 {
			t.Fatalf("%s: sequence %d follows %d: a gap or a duplicate between replay and live", replay.name, revs[i].Sequence, revs[i-1].Sequence)
		}
	}
	// Filtered on the manager: web's service events only.
	filtered := startEvents(t, rest[0], "--since", "10m", "--filter", "type=service", "--filter", "service=web")
	filtered.waitFor(t, "web's remove, replayed", func(e event) bool { return e.Type == "service" && e.Name == "web" && e.Action == "remove" })
	var fevs []event
	for _, e := range filtered.snapshot(t) {
		if e.Type != "store" { // a reset passes every filter
			fevs = append(fevs, e)
		}
	}
	if web := serviceEvents(fevs, "web"); len(web) != len(fevs) {
		t.Fatalf("%s shows %v, want web's service events only", filtered.name, fevs)
	}
	wantLifecycle(t, filtered.name, fevs)

	// That manager joined less than 10 minutes ago: it says it holds
	// events from then only.
	if !strings.Contains(replay.stderrText(), "warning: this manager holds events applied since") {
		t.Fatalf("%s does not warn that its manager started within the 10 minutes asked for: stderr %q", replay.name, replay.stderrText())
	}
}
