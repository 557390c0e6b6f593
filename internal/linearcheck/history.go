package linearcheck

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jaco-project/jaco/api/reason"
)

// Outcome is what a client learned about its operation.
type Outcome string

const (
	// OK is an operation the cluster acknowledged.
	OK Outcome = "ok"
	// Refused is an operation the cluster certainly did not apply.
	Refused Outcome = "refused"
	// Unknown is an operation that may or may not have been applied: the
	// answer was lost, timed out, or said outcome_unknown.
	Unknown Outcome = "unknown"
)

// refusedReasons are the reason words that prove a request was not
// applied: each is given before a write is proposed. A word missing here
// makes its operations Unknown, which is weaker but never wrong.
var refusedReasons = map[string]bool{
	reason.NoLeader: true,
	// quorum_lost is no_leader after the quorum-loss window: given by a
	// manager with no leader to forward to, before anything is proposed.
	reason.QuorumLost:           true,
	reason.NotReady:             true,
	reason.InvalidSpec:          true,
	reason.VersionConflict:      true,
	reason.LimitExceeded:        true,
	reason.NotFound:             true,
	reason.PermissionDenied:     true,
	reason.ClusterUninitialized: true,
	reason.Locked:               true,
	reason.NotAManager:          true,
	reason.RateLimited:          true,
}

// OutcomeOf maps the error a client call returned to its outcome, by the
// error's reason word (api/reason). A timeout, a broken connection or an
// error without a reason is Unknown: the request may have been applied.
func OutcomeOf(err error) Outcome {
	if err == nil {
		return OK
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return Unknown
	}
	if refusedReasons[reason.Of(err)] {
		return Refused
	}
	return Unknown
}

// Op is one recorded operation. Times are nanoseconds since the
// Recorder's start, from the monotonic clock.
type Op struct {
	Client  int     `json:"client"`
	Kind    string  `json:"kind"`
	Input   any     `json:"input"`
	Output  any     `json:"output,omitempty"`
	Invoke  int64   `json:"invoke_ns"`
	Return  int64   `json:"return_ns"`
	Outcome Outcome `json:"outcome"`
	// Err is the error's text, kept for the person reading the history;
	// nothing branches on it.
	Err string `json:"error,omitempty"`
}

// Recorder collects the operations of concurrent clients. It is safe for
// concurrent use.
type Recorder struct {
	start time.Time

	mu  sync.Mutex
	ops []Op
}

// NewRecorder returns an empty Recorder whose clock starts now.
func NewRecorder() *Recorder {
	return &Recorder{start: time.Now()}
}

// now reads the monotonic clock: time.Since uses the monotonic reading of
// start, so a wall-clock step during a run cannot reorder operations.
func (r *Recorder) now() int64 { return int64(time.Since(r.start)) }

// Pending is an operation that was invoked and has not returned yet.
type Pending struct {
	r      *Recorder
	op     Op
	closed sync.Once
}

// Invoke records that client is about to send an operation of kind with
// input. Call it immediately before the request leaves.
func (r *Recorder) Invoke(client int, kind string, input any) *Pending {
	return &Pending{r: r, op: Op{Client: client, Kind: kind, Input: input, Invoke: r.now()}}
}

// Done records the operation's return with its output and outcome. Only
// the first Done or DoneErr counts.
func (p *Pending) Done(output any, outcome Outcome) { p.finish(output, outcome, "") }

// DoneErr records the operation's return as the client call answered it:
// output is kept only for OK, the outcome comes from OutcomeOf(err).
func (p *Pending) DoneErr(output any, err error) {
	if err != nil {
		p.finish(nil, OutcomeOf(err), err.Error())
		return
	}
	p.finish(output, OK, "")
}

func (p *Pending) finish(output any, outcome Outcome, errText string) {
	p.closed.Do(func() {
		p.op.Return = p.r.now()
		p.op.Output, p.op.Outcome, p.op.Err = output, outcome, errText
		p.r.mu.Lock()
		p.r.ops = append(p.r.ops, p.op)
		p.r.mu.Unlock()
	})
}

// Ops returns a copy of the operations recorded so far, in return order.
// Operations still pending are not included: a runner waits for its
// clients (or gives up on them, recording Unknown) before checking.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}
