package node

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/internal/syncbuf"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// A stop that waits says, again and again, which step it waits in; one
// that ends says last how long it took.
func TestStopWatchNamesTheStepItWaitsIn(t *testing.T) {
	var out syncbuf.Buffer
	w := watchStop(slog.New(slog.NewTextHandler(&out, nil)), 5*time.Millisecond, "the node's loops")
	w.enter("the manager")
	waitfor.Eventually(t, 10*time.Second, func() error {
		if n := strings.Count(out.String(), `msg="jacod still stopping" step="the manager"`); n < 2 {
			return fmt.Errorf("%d reports of the step, want 2; log:\n%s", n, out.String())
		}
		return nil
	})
	w.end() // returns once the reports have stopped
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, `msg="jacod stopped" took=`) {
		t.Fatalf("the last line is not how long the stop took: %s", last)
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
