package node

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/internal/syncbuf"
)

// A stop that waits says, again and again, which step it waits in; one
// that ends says last how long it took.
func TestStopWatchNamesTheStepItWaitsIn(t *testing.T) {
	var out syncbuf.Buffer
	w := watchStop(slog.New(slog.NewTextHandler(&out, nil)), 5*time.Millisecond, "the node's loops")
	w.enter("the manager")
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(out.String(), `msg="jacod still stopping" step="the manager"`) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no two reports of the step within 10 s; log:\n%s", out.String())
		}
		time.Sleep(time.Millisecond)
	}
	w.end() // returns once the reports have stopped
	logged := out.String()
	if !strings.HasSuffix(logged, "\n") || !strings.Contains(logged[strings.LastIndex(logged[:len(logged)-1], "\n")+1:], `msg="jacod stopped" took=`) {
		t.Fatalf("the last line is not how long the stop took; log:\n%s", logged)
	}
}

// A stop quicker than the report period logs only its end.
func TestStopWatchQuietForAQuickStop(t *testing.T) {
	var out syncbuf.Buffer
	w := watchStop(slog.New(slog.NewTextHandler(&out, nil)), time.Hour, "the node's loops")
	w.enter("the manager")
	w.end()
	if got := strings.Count(out.String(), "\n"); got != 1 || strings.Contains(out.String(), "still stopping") {
		t.Errorf("want one line (stopped), got:\n%s", out.String())
	}
}
