package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite cmd/jaco/testdata/progress/*.golden")

var t0 = time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)

// svcAt is service web at meta.version version, spec_version specVersion.
func svcAt(version, specVersion uint64, replicas uint64, state api.UpdateState, msg string) *api.Service {
	s := &api.Service{
		Id: "svc1", Meta: &api.Meta{Version: version}, SpecVersion: specVersion,
		Spec: &api.ServiceSpec{Name: "web", Replicas: replicas, Image: "i"},
	}
	if state != api.UpdateState_UPDATE_STATE_UNSPECIFIED {
		s.UpdateStatus = &api.UpdateStatus{State: state, Message: msg}
	}
	return s
}

// slotAt is slot n's occupant; runningAt (from t0) sets running_since
// when the state is running.
func slotAt(n uint64, state api.TaskState, specVersion uint64, runningAt time.Duration) *api.SlotProgress {
	s := &api.SlotProgress{Slot: n, NodeId: "node1", TaskId: fmt.Sprintf("t%d.%d", n, specVersion), State: state,
		DesiredState: api.TaskState_TASK_STATE_RUNNING, SpecVersion: specVersion}
	if state == api.TaskState_TASK_STATE_RUNNING {
		s.RunningSince = timestamppb.New(t0.Add(runningAt))
	}
	return s
}

func failing(s *api.SlotProgress, why, msg string) *api.SlotProgress {
	s.Reason, s.Message = why, msg
	return s
}

func watchMsg(svc *api.Service, slots ...*api.SlotProgress) *api.WatchServiceMessage {
	return &api.WatchServiceMessage{Service: svc, Slots: slots}
}

// largeMsg is a compacted message (WatchServiceMessage): settled slots
// counted, with the latest start, and unlisted ones counted.
func largeMsg(svc *api.Service, settled uint64, since *timestamppb.Timestamp, unlisted uint64, slots ...*api.SlotProgress) *api.WatchServiceMessage {
	return &api.WatchServiceMessage{Service: svc, Slots: slots, Settled: settled, SettledRunningSince: since, Unlisted: unlisted}
}

// step is a message arriving at t0+at, or (msg nil) the wake timer firing.
type step struct {
	at  time.Duration
	msg *api.WatchServiceMessage
}

// play feeds steps to p as waitConverged does and returns the plain output
// with how the wait ended. A step the last verdict's timer would not yet
// have fired for fails the script.
func play(t *testing.T, p *progress, steps []step) string {
	t.Helper()
	var buf bytes.Buffer
	out := &plainOutput{w: &buf}
	var wakeAt time.Time
	for _, s := range steps {
		now := t0.Add(s.at)
		if s.msg == nil && (wakeAt.IsZero() || now.Before(wakeAt)) {
			t.Fatalf("timer step at %v, but the wait asked to be woken at %v", s.at, wakeAt.Sub(t0))
		}
		if s.msg != nil && !p.observe(s.msg, now) {
			continue
		}
		v := p.judge(now)
		out.draw(v.lines)
		wakeAt = time.Time{}
		if v.wake > 0 {
			wakeAt = now.Add(v.wake)
		}
		if v.done {
			if v.err != nil {
				return buf.String() + "=> exit 1: error: " + describe(v.err) + "\n"
			}
			return buf.String() + "=> exit 0\n"
		}
	}
	return buf.String() + "=> still waiting\n"
}

const (
	tsRunning  = api.TaskState_TASK_STATE_RUNNING
	tsPending  = api.TaskState_TASK_STATE_PENDING
	tsStarting = api.TaskState_TASK_STATE_STARTING
	tsAssigned = api.TaskState_TASK_STATE_ASSIGNED
	usUpdating = api.UpdateState_UPDATE_STATE_UPDATING
	usNone     = api.UpdateState_UPDATE_STATE_UNSPECIFIED
)

func TestProgressGolden(t *testing.T) {
	sec := time.Second
	for _, tc := range []struct {
		name  string
		kind  waitKind
		wrote *api.Service
		steps []step
	}{{
		// A create: replicas start (one after a failure), then all run
		// and the monitor period is waited for. A message from a manager
		// behind the write is ignored.
		name: "create", kind: waitConverge, wrote: svcAt(10, 1, 3, usNone, ""),
		steps: []step{
			{0, watchMsg(svcAt(9, 1, 1, usNone, ""))},
			{0, watchMsg(svcAt(10, 1, 3, usNone, ""))},
			{sec / 10, watchMsg(svcAt(10, 1, 3, usNone, ""), slotAt(1, tsAssigned, 1, 0), slotAt(2, tsAssigned, 1, 0), slotAt(3, tsPending, 1, 0))},
			{1 * sec, watchMsg(svcAt(10, 1, 3, usNone, ""), slotAt(1, tsRunning, 1, sec), slotAt(2, tsStarting, 1, 0),
				failing(slotAt(3, tsPending, 1, 0), "exit_code", "launch exited 1"))},
			{2 * sec, watchMsg(svcAt(10, 1, 3, usNone, ""), slotAt(1, tsRunning, 1, sec), slotAt(2, tsRunning, 1, 2*sec), slotAt(3, tsRunning, 1, 2*sec))},
			{7 * sec, nil},
		},
	}, {
		// A create of a service too large to list every slot: the
		// manager counts the slots running the current spec and lists
		// the others (some left unlisted); the CLI waits until all are
		// counted, then for the monitor period from the latest start.
		name: "create-large", kind: waitConverge, wrote: svcAt(10, 1, 5000, usNone, ""),
		steps: []step{
			{0, watchMsg(svcAt(10, 1, 5000, usNone, ""))},
			{0, largeMsg(svcAt(10, 1, 5000, usNone, ""), 0, nil, 4997, slotAt(1, tsPending, 1, 0), slotAt(2, tsPending, 1, 0), slotAt(3, tsPending, 1, 0))},
			{sec, largeMsg(svcAt(10, 1, 5000, usNone, ""), 4998, timestamppb.New(t0.Add(sec)), 0,
				slotAt(7, tsStarting, 1, 0), failing(slotAt(9, tsPending, 1, 0), "exit_code", "launch exited 1"))},
			{2 * sec, largeMsg(svcAt(10, 1, 5000, usNone, ""), 5000, timestamppb.New(t0.Add(2*sec)), 0)},
			{7 * sec, nil},
		},
	}, {
		// A bad update: the first new replica fails, the update
		// pauses, the CLI says why and exits 1.
		name: "update-paused", kind: waitUpdate, wrote: svcAt(20, 2, 3, usUpdating, "update in progress"),
		steps: []step{
			{0, watchMsg(svcAt(20, 2, 3, usUpdating, "update in progress"), slotAt(1, tsRunning, 1, 0), slotAt(2, tsRunning, 1, 0), slotAt(3, tsRunning, 1, 0))},
			{sec, watchMsg(svcAt(21, 2, 3, usUpdating, "update in progress"), slotAt(1, tsStarting, 2, 0), slotAt(2, tsRunning, 1, 0), slotAt(3, tsRunning, 1, 0))},
			{2 * sec, watchMsg(svcAt(22, 2, 3, usUpdating, "update in progress"),
				failing(slotAt(1, tsPending, 2, 0), "exit_code", "cannot start: no config"), slotAt(2, tsRunning, 1, 0), slotAt(3, tsRunning, 1, 0))},
			{2 * sec, watchMsg(svcAt(23, 2, 3, api.UpdateState_UPDATE_STATE_PAUSED, "update paused: replica web.1 (task t1.2) on w1 failed: exit_code: cannot start: no config (1 of 3 slots failed)"),
				failing(slotAt(1, tsPending, 2, 0), "exit_code", "cannot start: no config"), slotAt(2, tsRunning, 1, 0), slotAt(3, tsRunning, 1, 0))},
		},
	}, {
		// --update-failure-action rollback: the update ends rolled back,
		// which is a failure of `service update`.
		name: "update-rolled-back", kind: waitUpdate, wrote: svcAt(30, 2, 2, usUpdating, ""),
		steps: []step{
			{0, watchMsg(svcAt(30, 2, 2, usUpdating, ""), slotAt(1, tsStarting, 2, 0), slotAt(2, tsRunning, 1, 0))},
			{sec, watchMsg(svcAt(31, 3, 2, api.UpdateState_UPDATE_STATE_ROLLBACK_STARTED,
				"rollback started: replica web.1 (task t1.2) on w1 failed: exit_code: exited with code 1 (1 of 2 slots failed)"),
				slotAt(1, tsStarting, 3, 0), slotAt(2, tsRunning, 1, 0))},
			{2 * sec, watchMsg(svcAt(32, 3, 2, api.UpdateState_UPDATE_STATE_ROLLBACK_COMPLETED, "rollback completed"),
				slotAt(1, tsRunning, 3, 2*sec), slotAt(2, tsRunning, 3, 2*sec))},
		},
	}, {
		// `service rollback` ends when the rollback completes.
		name: "rollback", kind: waitRollback, wrote: svcAt(40, 3, 2, api.UpdateState_UPDATE_STATE_ROLLBACK_STARTED, "rollback requested"),
		steps: []step{
			{0, watchMsg(svcAt(40, 3, 2, api.UpdateState_UPDATE_STATE_ROLLBACK_STARTED, "rollback requested"), slotAt(1, tsRunning, 2, 0), slotAt(2, tsRunning, 2, 0))},
			{sec, watchMsg(svcAt(41, 3, 2, api.UpdateState_UPDATE_STATE_ROLLBACK_STARTED, "rollback requested"), slotAt(1, tsRunning, 3, sec), slotAt(2, tsRunning, 2, 0))},
			{3 * sec, watchMsg(svcAt(42, 3, 2, api.UpdateState_UPDATE_STATE_ROLLBACK_COMPLETED, "rollback completed"), slotAt(1, tsRunning, 3, sec), slotAt(2, tsRunning, 3, 2*sec))},
		},
	}, {
		// Scaling to 0: done once no slot is held.
		name: "scale-to-zero", kind: waitConverge, wrote: svcAt(50, 1, 0, usNone, ""),
		steps: []step{
			{0, watchMsg(svcAt(50, 1, 0, usNone, ""), slotAt(1, tsRunning, 1, 0), slotAt(2, tsRunning, 1, 0))},
			{sec / 10, watchMsg(svcAt(50, 1, 0, usNone, ""))},
		},
	}, {
		name: "removed", kind: waitConverge, wrote: svcAt(60, 1, 1, usNone, ""),
		steps: []step{
			{0, watchMsg(svcAt(60, 1, 1, usNone, ""), slotAt(1, tsPending, 1, 0))},
			{sec, &api.WatchServiceMessage{Removed: true}},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := play(t, newProgress(tc.kind, tc.wrote, nil), tc.steps)
			path := filepath.Join("testdata", "progress", tc.name+".golden")
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update-golden to write it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s:\n--- got\n%s--- want\n%s", path, got, want)
			}
			for i, b := range []byte(got) {
				if b < 0x20 && b != '\n' || b == 0x7f {
					t.Fatalf("control byte %#x at %d in non-terminal output", b, i)
				}
			}
		})
	}
}

// The monitor period is the service's update monitor, counted from
// running_since but never more than the period from when the CLI saw the
// replica running (the leader's clock may be ahead).
func TestProgressWaitsTheMonitorPeriod(t *testing.T) {
	svc := svcAt(1, 1, 1, usNone, "")
	svc.Spec.Update = &api.UpdatePolicy{Monitor: durationpb.New(2 * time.Second)}
	p := newProgress(waitConverge, svc, nil)
	// The leader says it has run 1.5s: 0.5s left.
	p.observe(watchMsg(svc, slotAt(1, tsRunning, 1, -1500*time.Millisecond)), t0)
	if v := p.judge(t0); v.done || v.wake != 500*time.Millisecond || !strings.Contains(v.lines[len(v.lines)-1].text, "waiting 2s") {
		t.Fatalf("verdict %+v, want to wait 0.5s more, saying 2s", v)
	}
	// A leader clock 10s ahead: running_since in the CLI's future. The
	// wait is still at most the period from when the CLI saw it.
	p = newProgress(waitConverge, svc, nil)
	p.observe(watchMsg(svc, slotAt(1, tsRunning, 1, 10*time.Second)), t0)
	if v := p.judge(t0); v.wake != 2*time.Second {
		t.Fatalf("wake %v with the leader's clock ahead, want 2s", v.wake)
	}
	if v := p.judge(t0.Add(2 * time.Second)); !v.done || v.err != nil {
		t.Fatalf("verdict %+v after the period, want converged", v)
	}
}

// A replica that ended for good (desired complete, failed) ends the wait
// with replica_failed; a finished one-shot replica counts as converged.
func TestProgressReplicaEndedForGood(t *testing.T) {
	svc := svcAt(1, 1, 2, usNone, "")
	done := slotAt(1, api.TaskState_TASK_STATE_COMPLETE, 1, 0)
	done.DesiredState = api.TaskState_TASK_STATE_COMPLETE
	bad := failing(slotAt(2, api.TaskState_TASK_STATE_FAILED, 1, 0), "exit_code", "exit 3")
	bad.DesiredState = api.TaskState_TASK_STATE_COMPLETE
	p := newProgress(waitConverge, svc, nil)
	p.observe(watchMsg(svc, done, bad), t0)
	v := p.judge(t0)
	if !v.done || reason.Of(v.err) != reason.ReplicaFailed || !strings.Contains(describe(v.err), "web.2 ") || !strings.Contains(describe(v.err), "exit 3") {
		t.Fatalf("verdict %+v (%v), want replica_failed naming the replica and its reason", v, v.err)
	}
}

// On a terminal the frame is redrawn in place: the second frame moves up
// over the first, and lines are not wrapped.
func TestTTYOutputRedraws(t *testing.T) {
	var buf bytes.Buffer
	o := &ttyOutput{w: &buf}
	o.draw([]progressLine{{"a", "1/2: pending"}, {"b", "2/2: pending"}, {"o", "overall progress: 0 out of 2 replicas running"}})
	first := buf.Len()
	o.draw([]progressLine{{"a", "1/2: running"}, {"b", "2/2: running"}, {"o", "verifying: waiting 5s for stability"}})
	second := buf.String()[first:]
	if !strings.HasPrefix(second, "\x1b[?7l\x1b[3A") || !strings.Contains(second, "\r\x1b[2K1/2: running\n") || !strings.HasSuffix(second, "\x1b[?7h") {
		t.Fatalf("second frame %q: want it drawn over the first", second)
	}
}

// fakeWatch answers WatchService: not_found the first time (a manager
// that has not applied the create yet), then the scripted messages.
type fakeWatch struct {
	api.ControlServiceClient
	opens int
	msgs  []*api.WatchServiceMessage
}

func (f *fakeWatch) WatchService(ctx context.Context, _ *api.WatchServiceRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[api.WatchServiceMessage], error) {
	f.opens++
	if f.opens == 1 {
		return nil, reason.Error(codes.NotFound, reason.NotFound, "no service with id or name %q", "web")
	}
	return &fakeStream{ctx: ctx, msgs: f.msgs}, nil
}

type fakeStream struct {
	grpc.ClientStream
	ctx  context.Context
	msgs []*api.WatchServiceMessage
}

func (s *fakeStream) Recv() (*api.WatchServiceMessage, error) {
	if len(s.msgs) == 0 {
		<-s.ctx.Done() // a watch stays open while nothing changes
		return nil, s.ctx.Err()
	}
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	return m, nil
}

// waitConverged opens the watch again while the manager does not know the
// service yet, skips what predates the write, and wakes itself when the
// monitor period is over: no further message is needed to converge.
func TestWaitConvergedFollowsTheWatch(t *testing.T) {
	svc := svcAt(5, 1, 1, usNone, "")
	svc.Spec.Update = &api.UpdatePolicy{Monitor: durationpb.New(time.Second)}
	stale := svcAt(4, 1, 1, usNone, "")
	running := slotAt(1, tsRunning, 1, 0)
	running.RunningSince = timestamppb.Now()
	fake := &fakeWatch{msgs: []*api.WatchServiceMessage{watchMsg(stale), watchMsg(svc, running)}}
	var buf bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := waitConverged(ctx, fake, svc, newProgress(waitConverge, svc, nil), &plainOutput{w: &buf}, 5*time.Second)
	if err != nil {
		t.Fatalf("wait: %v\n%s", err, buf.String())
	}
	want := "1/1: running\nverifying: waiting 1s for stability\nverified: service converged\n"
	if buf.String() != want || fake.opens != 2 {
		t.Fatalf("output %q after %d opens, want %q after 2", buf.String(), fake.opens, want)
	}
}
