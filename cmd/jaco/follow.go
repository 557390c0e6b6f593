package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// waitFlags are the flags of a command that waits for convergence.
type waitFlags struct {
	detach bool
	quiet  bool
}

func (f *waitFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&f.detach, "detach", "d", false, "return once the change is accepted, without waiting for the service to converge")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "wait without printing progress")
}

// waitHelp is what the help of every waiting command says about waiting.
const waitHelp = "\n\nThe command then waits until the service has converged, showing each replica slot and an\n" +
	"overall line, and exits 0; it exits 1 when the update paused or was rolled back (the reason\n" +
	"says why: update_paused, rollback_paused, update_rolled_back). A replica that fails is shown\n" +
	"and waited for, as its restarts go on: the wait has no bound. Ctrl-C stops waiting and leaves\n" +
	"the service as it is; -d does not wait. On a terminal the progress is redrawn in place,\n" +
	"elsewhere it is plain lines, one per change."

// progressOutput shows progress frames.
type progressOutput interface{ draw(lines []progressLine) }

// plainOutput writes each line that changed since it was last written: a
// log of the changes, with no control characters, for files and pipes.
type plainOutput struct {
	w     io.Writer
	shown map[string]string
}

func (o *plainOutput) draw(lines []progressLine) {
	if o.shown == nil {
		o.shown = map[string]string{}
	}
	for _, l := range lines {
		text := terminalSafe(l.text)
		if o.shown[l.key] != text {
			fmt.Fprintln(o.w, text)
			o.shown[l.key] = text
		}
	}
}

// ttyOutput redraws the whole frame in place. Line wrapping is off while
// it draws, so a long line cannot take two rows and break the count of
// rows to go back up.
type ttyOutput struct {
	w    io.Writer
	rows int
	last []progressLine
}

func (o *ttyOutput) draw(lines []progressLine) {
	if len(lines) == 0 || slices.Equal(lines, o.last) {
		return
	}
	o.last = lines
	buf := []byte("\x1b[?7l")
	if o.rows > 0 {
		buf = fmt.Appendf(buf, "\x1b[%dA", o.rows)
	}
	for _, l := range lines {
		buf = fmt.Appendf(buf, "\r\x1b[2K%s\n", terminalSafe(l.text))
	}
	buf = append(buf, "\x1b[J\x1b[?7h"...) // rows the last frame had beyond this one
	_, _ = o.w.Write(buf)
	o.rows = len(lines)
}

type quietOutput struct{}

func (quietOutput) draw([]progressLine) {}

// outputFor picks how progress is shown on w: redrawn on a terminal,
// plain lines elsewhere.
func outputFor(w io.Writer, quiet bool) progressOutput {
	if quiet {
		return quietOutput{}
	}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return &ttyOutput{w: w}
		}
	}
	return &plainOutput{w: w}
}

// waitConverged follows svc through WatchService until p says it has
// converged or cannot. The watch is opened again when the manager
// answering goes away, until retryFor has passed without a message; a
// manager that has not applied the write yet (not_found after a create)
// counts as one to wait for.
func waitConverged(ctx context.Context, c api.ControlServiceClient, svc *api.Service, p *progress, out progressOutput, retryFor time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs := make(chan *api.WatchServiceMessage)
	errc := make(chan error, 1)
	go func() { errc <- watchService(ctx, c, svc.Id, msgs, retryFor) }()
	wake := time.NewTimer(time.Hour)
	wake.Stop()
	for {
		select {
		case m := <-msgs:
			if !p.observe(m, time.Now()) {
				continue
			}
		case <-wake.C:
		case err := <-errc:
			return err // a status error as it came: describe shows its reason
		case <-ctx.Done():
			return ctx.Err()
		}
		v := p.judge(time.Now())
		out.draw(v.lines)
		if v.done {
			return v.err
		}
		wake.Stop()
		if v.wake > 0 {
			wake.Reset(v.wake)
		}
	}
}

// watchService streams service id's messages to msgs until ctx ends or
// the watch fails for good.
func watchService(ctx context.Context, c api.ControlServiceClient, id string, msgs chan<- *api.WatchServiceMessage, retryFor time.Duration) error {
	lastGood := time.Now()
	for {
		err := watchOnce(ctx, c, id, msgs, &lastGood)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !watchRetryable(err) || time.Since(lastGood) > retryFor {
			return err
		}
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func watchOnce(ctx context.Context, c api.ControlServiceClient, id string, msgs chan<- *api.WatchServiceMessage, lastGood *time.Time) error {
	stream, err := c.WatchService(ctx, &api.WatchServiceRequest{Service: id})
	if err != nil {
		return err
	}
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return errors.New("the manager ended the watch")
		}
		if err != nil {
			return err
		}
		*lastGood = time.Now()
		select {
		case msgs <- m:
		case <-ctx.Done():
			return ctx.Err()
		}
		if m.Removed {
			<-ctx.Done() // the stream ends; the caller has what it needs
			return ctx.Err()
		}
	}
}

// watchRetryable: the watch may work when opened again, on this manager or
// once it caught up.
func watchRetryable(err error) bool {
	switch reason.Of(err) {
	case reason.NotFound, reason.NoLeader, reason.NotReady, reason.Unavailable:
		return true
	case "":
		return status.Code(err) == codes.Unavailable
	}
	return false
}
