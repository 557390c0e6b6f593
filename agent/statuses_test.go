package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
)

func TestReporterCoalescesAndKeepsUnsent(t *testing.T) {
	r := NewStatuses()
	r.Enqueue("t1", &api.TaskStatus{State: preparing})
	r.Enqueue("t1", &api.TaskStatus{State: starting})
	r.Enqueue("t2", &api.TaskStatus{State: running})

	// A failed send keeps everything for the next session.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	broken := errors.New("session gone")
	err := r.run(ctx, time.Millisecond, func(context.Context, []*api.TaskStatusUpdate) error { return broken })
	if !errors.Is(err, broken) {
		t.Fatalf("run = %v, want the send error", err)
	}

	// The next session sends the latest status of each replica once; a
	// status that changes while a batch is in flight is sent again.
	var sent [][]*api.TaskStatusUpdate
	err = r.run(ctx, time.Millisecond, func(_ context.Context, u []*api.TaskStatusUpdate) error {
		sent = append(sent, u)
		if len(sent) == 1 {
			r.Enqueue("t1", &api.TaskStatus{State: running})
		}
		if len(sent) == 2 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run = %v", err)
	}
	if len(sent) != 2 || len(sent[0]) != 2 || sent[0][0].TaskId != "t1" || sent[0][0].Status.State != starting ||
		sent[0][1].TaskId != "t2" || len(sent[1]) != 1 || sent[1][0].Status.State != running {
		t.Fatalf("batches sent: %v", sent)
	}
	if left := r.batch(); len(left) != 0 {
		t.Fatalf("pending after acceptance: %v", left)
	}
}

func TestReporterDrop(t *testing.T) {
	r := NewStatuses()
	r.Enqueue("t1", &api.TaskStatus{State: running})
	if !r.Pending("t1") || r.Pending("t2") {
		t.Fatal("Pending: want t1 only")
	}
	r.Drop("t1")
	if r.Pending("t1") {
		t.Fatal("t1 pending after drop")
	}
	if left := r.batch(); len(left) != 0 {
		t.Fatalf("pending after drop: %v", left)
	}
}

// Steps before RUNNING wait for the interval after a send; a replica
// running (or ended) is sent at once. The interval is an hour: a batch
// that came at all came without it.
func TestReporterSendsRunningAtOnce(t *testing.T) {
	r := NewStatuses()
	r.Enqueue("t1", &api.TaskStatus{State: preparing})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	batches := make(chan []*api.TaskStatusUpdate, 10)
	done := make(chan error, 1)
	go func() {
		done <- r.run(ctx, time.Hour, func(_ context.Context, u []*api.TaskStatusUpdate) error {
			batches <- u
			return nil
		})
	}()
	next := func(what string) []*api.TaskStatusUpdate {
		t.Helper()
		select {
		case u := <-batches:
			return u
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no batch within 5s", what)
			return nil
		}
	}
	if u := next("the first status"); len(u) != 1 || u[0].Status.State != preparing {
		t.Fatalf("first batch %v, want t1 preparing", u)
	}
	r.Enqueue("t1", &api.TaskStatus{State: starting})
	select {
	case u := <-batches:
		t.Fatalf("starting was sent within the interval: %v", u)
	case <-time.After(100 * time.Millisecond):
	}
	r.Enqueue("t2", &api.TaskStatus{State: api.TaskState_TASK_STATE_FAILED})
	if u := next("a failed replica"); len(u) != 2 || u[0].Status.State != starting || u[1].Status.State != api.TaskState_TASK_STATE_FAILED {
		t.Fatalf("batch after t2 failed: %v, want t1 starting and t2 failed", u)
	}
	r.Enqueue("t1", &api.TaskStatus{State: running})
	if u := next("a running replica"); len(u) != 1 || u[0].Status.State != running {
		t.Fatalf("batch after t1 running: %v, want t1 running", u)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("run = %v", err)
	}
}

// A batch is ordered by task id; a status replaced after it was sent stays
// pending when the batch is accepted, and one accepted as sent goes.
func TestStatusesAcceptedKeepsWhatChangedSince(t *testing.T) {
	r := NewStatuses()
	r.Enqueue("b", &api.TaskStatus{State: running})
	r.Enqueue("a", &api.TaskStatus{State: starting})
	sent := r.batch()
	if len(sent) != 2 || sent[0].TaskId != "a" || sent[1].TaskId != "b" {
		t.Fatalf("batch = %v, want a then b", sent)
	}
	newer := &api.TaskStatus{State: running}
	r.Enqueue("a", newer) // a changed while the batch was on its way
	r.accepted(sent)
	if left := r.batch(); len(left) != 1 || left[0].TaskId != "a" || left[0].Status != newer {
		t.Fatalf("after accepted: %v, want a's newer status only", left)
	}
}
