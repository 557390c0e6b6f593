package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
)

func TestEventLine(t *testing.T) {
	at := timestamppb.New(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	for _, c := range []struct {
		e    *api.Event
		want string
	}{
		{&api.Event{Time: at, Type: "service", Action: "update", Name: "web", Id: "s1",
			Changes: []*api.EventChange{{Field: "replicas", From: "3", To: "5"}}},
			"2026-11-28T12:00:00Z service update web (id s1) replicas 3→5"},
		{&api.Event{Time: at, Type: "task", Action: "state", Name: "web.1", Id: "t1", From: "running", To: "failed",
			Reason: "exit_code", Message: "exited 1", Changes: []*api.EventChange{{Field: "node", From: "", To: "n1"}}},
			`2026-11-28T12:00:00Z task state web.1 (id t1) running→failed node -→n1 reason=exit_code message="exited 1"`},
		{&api.Event{Time: at, Type: "task", Action: "create", Name: "web.2", Id: "t2", To: "pending"},
			"2026-11-28T12:00:00Z task create web.2 (id t2) pending"},
	} {
		if got := eventLine(c.e); got != c.want {
			t.Errorf("eventLine:\n got %s\nwant %s", got, c.want)
		}
	}
}

// TestPrintEventsJSONLines: --format json prints one object per line,
// the JSON view's keys; a gap is a warning on stderr, not on stdout.
func TestPrintEventsJSONLines(t *testing.T) {
	msgs := []*api.WatchEventsMessage{
		{Gap: &api.EventsGap{Message: "this manager holds events applied since X only"}},
		{Events: []*api.Event{{Type: "service", Action: "create", Name: "web", Sequence: 1}, {Type: "task", Action: "create", Sequence: 2}}},
	}
	var out, errw bytes.Buffer
	err := printEvents(&out, &errw, true, func() (*api.WatchEventsMessage, error) {
		if len(msgs) == 0 {
			return nil, io.EOF
		}
		m := msgs[0]
		msgs = msgs[1:]
		return m, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"type":"service"`) || !strings.Contains(lines[0], `"sequence":1`) {
		t.Fatalf("stdout %q, want two JSON lines, the first the service create", out.String())
	}
	if !strings.HasPrefix(errw.String(), "warning: this manager holds events") {
		t.Fatalf("stderr %q, want the gap as a warning", errw.String())
	}
}
