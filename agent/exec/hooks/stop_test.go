package hooks

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
)

// TestStopLadder proves each rung with a launch that ignores the signals
// before it (noting each in the log): every earlier rung's signal reached
// launch, the signal that ended it shows in the exit and the log, Stop
// waits out each grace period it skips, and only the SIGKILL rung is an
// error.
func TestStopLadder(t *testing.T) {
	const grace = 300 * time.Millisecond
	loop := "echo ready\nwhile :; do sleep 0.05; done\n"
	for _, tc := range []struct {
		name     string
		traps    string
		wantExit exec.Exit
		wantLog  []string
		minTime  time.Duration
		wantErr  error
	}{
		{
			name: "SIGINT", traps: "trap 'echo got INT; exit 0' INT\n",
			wantExit: exec.Exit{Code: 0}, wantLog: []string{"got INT"},
		},
		{
			name: "SIGQUIT", traps: "trap 'echo ignored INT' INT\ntrap 'echo got QUIT; exit 3' QUIT\n",
			wantExit: exec.Exit{Code: 3}, wantLog: []string{"ignored INT", "got QUIT"}, minTime: grace,
		},
		{
			name: "SIGKILL", traps: "trap 'echo ignored INT' INT\ntrap 'echo ignored QUIT' QUIT\n",
			wantExit: exec.Exit{Code: 137, Signal: "SIGKILL"}, wantLog: []string{"ignored INT", "ignored QUIT"},
			minTime: 2 * grace, wantErr: exec.ErrFailedToStop,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := newReplica(t, map[string]string{"launch": "#!/bin/sh\n" + tc.traps + loop}, func(s *api.ServiceSpec) {
				s.StopGracePeriod = durationpb.New(grace)
				s.AbortGracePeriod = durationpb.New(grace)
			})
			c := controllerFor(t, newRuntime(t), rep)
			prepareAndStart(t, c)
			waitLog(t, rep, "ready")
			begin := time.Now()
			err := c.Stop(testContext(t))
			took := time.Since(begin)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Stop error = %v, want %v\n%s", err, tc.wantErr, readLog(t, rep))
			}
			if err != nil && !strings.Contains(err.Error(), "failed to stop in time") {
				t.Errorf("Stop error %q does not say the replica failed to stop in time", err)
			}
			if took < tc.minTime {
				t.Errorf("Stop took %v, want at least %v (grace periods waited out)", took, tc.minTime)
			}
			exit := waitExit(t, c)
			if exit.Code != tc.wantExit.Code || exit.Signal != tc.wantExit.Signal {
				t.Fatalf("exit = %+v, want %+v", exit, tc.wantExit)
			}
			log := readLog(t, rep)
			for _, want := range tc.wantLog {
				if !strings.Contains(log, want) {
					t.Errorf("log lacks %q:\n%s", want, log)
				}
			}
			// Stopping a stopped replica is a no-op.
			if err := c.Stop(testContext(t)); err != nil {
				t.Fatalf("second Stop: %v", err)
			}
		})
	}
}
