package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/client"
)

// drainPoll is how often `jaco node remove` reads the drain's progress;
// drainCountPoll how often until the leader has counted the replicas to
// move: a small drain may be over within one drainPoll, and only a count
// seen before the node goes lets the last line say how many moved.
const (
	drainPoll      = 500 * time.Millisecond
	drainCountPoll = 50 * time.Millisecond
)

// drainSeenWithin is how long the drain RemoveNode started may take to
// show on the manager answering (it may lag the leader a little).
const drainSeenWithin = 5 * time.Second

// followRemoval shows the drain RemoveNode started on a node being
// removed, on progress, until the node is gone (nil, said on out), the
// drain timed out (drain_timeout) or was cancelled, or ctx ends. Each read has its own
// timeout; failing reads (a leader change) are retried until callTimeout
// passes without a good one.
func followRemoval(ctx context.Context, c *client.Client, node string, callTimeout time.Duration, out, progress io.Writer) error {
	last := ""
	var total uint32
	seen := false // a drain of this removal was seen
	drained := false
	start := time.Now()
	lastGood := start
	removed := func() error {
		// Only a drained node is removed: all moved, whether or not a
		// poll caught the DRAINED state.
		if line := fmt.Sprintf("drained: %d/%d moved", total, total); total > 0 && !strings.HasPrefix(last, line) {
			fmt.Fprintln(progress, line)
		}
		fmt.Fprintf(out, "Node %s removed.\n", node)
		return nil
	}
	tick := time.NewTimer(drainCountPoll)
	defer tick.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, callTimeout)
		resp, err := c.Control.GetNode(rctx, &api.GetNodeRequest{Node: node})
		cancel()
		d := resp.GetNode().GetDrain()
		switch {
		case status.Code(err) == codes.NotFound:
			return removed()
		case !seen && err == nil && !d.GetRemove() && time.Since(start) > drainSeenWithin:
			return status.Errorf(codes.Aborted, "the removal of %s was cancelled before its drain showed; the node stays", node)
		case err != nil && drained:
			// Drained, then gone from under us: the manager answering was
			// the node removed, and has stopped.
			return removed()
		case err != nil && time.Since(lastGood) > callTimeout:
			return err
		case err != nil:
		case d.GetRemove() && d.GetState() != api.DrainState_DRAIN_STATE_NONE:
			seen, lastGood = true, time.Now()
			total = d.GetTotal()
			drained = d.GetState() == api.DrainState_DRAIN_STATE_DRAINED
			// 0/0 while draining: the leader has not counted yet.
			if line := drainLine(d); line != last && (d.GetTotal() > 0 || d.GetState() != api.DrainState_DRAIN_STATE_DRAINING) {
				fmt.Fprintln(progress, line)
				last = line
			}
			if d.GetState() == api.DrainState_DRAIN_STATE_TIMED_OUT {
				return reason.Error(codes.DeadlineExceeded, reason.DrainTimeout, "%s: %s", node, trimReason(d.GetMessage()))
			}
		case seen:
			return status.Errorf(codes.Aborted, "the removal of %s was cancelled (its drain was changed); the node stays", node)
		default:
			lastGood = time.Now()
		}
		if total > 0 {
			tick.Reset(drainPoll)
		} else {
			tick.Reset(drainCountPoll)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// drainLine is one progress line: "draining: 2/6 moved (moving 4 replicas)".
func drainLine(d *api.NodeDrain) string {
	line := fmt.Sprintf("%s: %d/%d moved", enumword.Of(d.GetState()), d.GetMoved(), d.GetTotal())
	if d.GetMessage() != "" && d.GetState() != api.DrainState_DRAIN_STATE_TIMED_OUT {
		line += " (" + d.GetMessage() + ")"
	}
	return line
}

// trimReason drops the "pending: drain_timeout: " the drain machine puts
// before its sentence: the error's reason word says it already.
func trimReason(msg string) string {
	return strings.TrimPrefix(msg, "pending: "+reason.DrainTimeout+": ")
}
