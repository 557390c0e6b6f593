package exec

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"syscall"
	"testing"
	"time"
)

// fakeProcess ends when it receives endsOn (never, when 0).
type fakeProcess struct {
	endsOn syscall.Signal
	got    []syscall.Signal
	ended  bool
}

func (f *fakeProcess) Signal(_ context.Context, sig syscall.Signal) (bool, error) {
	if f.ended {
		return true, nil
	}
	f.got = append(f.got, sig)
	f.ended = sig == f.endsOn
	return false, nil
}

func (f *fakeProcess) WaitGone(context.Context, time.Duration) (bool, error) { return f.ended, nil }

func TestLadderRungs(t *testing.T) {
	l := Ladder{StopGrace: time.Millisecond, AbortGrace: time.Millisecond, KillWait: time.Millisecond,
		Log: slog.New(slog.DiscardHandler)}
	for _, tc := range []struct {
		endsOn             syscall.Signal
		want               []syscall.Signal
		failed, stillAlive bool
	}{
		{syscall.SIGINT, []syscall.Signal{syscall.SIGINT}, false, false},
		{syscall.SIGQUIT, []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT}, false, false},
		{syscall.SIGKILL, []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGKILL}, true, false},
		{0, []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGKILL}, true, true},
	} {
		p := &fakeProcess{endsOn: tc.endsOn}
		err := l.Run(context.Background(), p)
		if !slices.Equal(p.got, tc.want) {
			t.Errorf("ends on %v: signals %v, want %v", tc.endsOn, p.got, tc.want)
		}
		if errors.Is(err, ErrFailedToStop) != tc.failed || errors.Is(err, ErrStillRunning) != tc.stillAlive {
			t.Errorf("ends on %v: err %v; want failed=%v still running=%v", tc.endsOn, err, tc.failed, tc.stillAlive)
		}
	}
}
