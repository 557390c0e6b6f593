package containerd

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/containerdtest"
)

// Each rung of the stop ladder is proven by a replica that ignores the
// signals before it. A shell as PID 1 gets a signal only when it traps it
// (the kernel drops unhandled signals to a namespace's init), and a bare
// sleep as PID 1 ignores everything but SIGKILL.
func TestStopLadder(t *testing.T) {
	d := containerdtest.Start(t)
	n := newNode(t, d, "node-stop")
	const loop = `echo ready; while :; do sleep 1 & wait $!; done`
	cases := []struct {
		name         string
		command      []string
		stop, abort  time.Duration
		wantCode     int
		wantSignal   string
		wantFailed   bool
		minTook      time.Duration // the rungs it must have waited through
		maxTook      time.Duration // it must not have waited for later rungs
		waitForReady bool
	}{
		{
			name:    "exits on SIGINT",
			command: []string{"sh", "-c", `trap 'exit 3' INT; ` + loop},
			stop:    time.Minute, abort: time.Minute,
			wantCode: 3, maxTook: 20 * time.Second, waitForReady: true,
		},
		{
			name:    "ignores SIGINT, exits on SIGQUIT",
			command: []string{"sh", "-c", `trap '' INT; trap 'exit 4' QUIT; ` + loop},
			stop:    500 * time.Millisecond, abort: time.Minute,
			wantCode: 4, minTook: 500 * time.Millisecond, maxTook: 20 * time.Second, waitForReady: true,
		},
		{
			name:    "sleep as PID 1 takes SIGKILL",
			command: []string{"sleep", "3600"},
			stop:    500 * time.Millisecond, abort: 500 * time.Millisecond,
			wantCode: 137, wantSignal: "SIGKILL", wantFailed: true, minTook: time.Second, maxTook: 20 * time.Second,
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := replica(t, n.id, "task-stop-"+string(rune('a'+i)), &api.ServiceSpec{
				Command:          tc.command,
				StopGracePeriod:  durationpb.New(tc.stop),
				AbortGracePeriod: durationpb.New(tc.abort),
			})
			c := start(t, n.rt, rep)
			if tc.waitForReady {
				waitLog(t, rep, "ready") // the traps are set
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			began := time.Now()
			err := c.Stop(ctx)
			took := time.Since(began)
			if tc.wantFailed != errors.Is(err, exec.ErrFailedToStop) {
				t.Fatalf("Stop = %v; want failed-to-stop %v", err, tc.wantFailed)
			}
			if !tc.wantFailed && err != nil {
				t.Fatalf("Stop = %v", err)
			}
			if took < tc.minTook || took > tc.maxTook {
				t.Errorf("Stop took %s, want within [%s, %s]", took, tc.minTook, tc.maxTook)
			}
			if e := wait(t, c); e.Code != tc.wantCode || e.Signal != tc.wantSignal {
				t.Errorf("exit %+v, want code %d signal %q", e, tc.wantCode, tc.wantSignal)
			}
			if err := c.Stop(ctx); err != nil {
				t.Errorf("Stop of a stopped replica = %v, want nil", err)
			}
		})
	}
}
