package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/backoff"
)

// errSessionClosed is a session stream the dispatcher ended.
var errSessionClosed = errors.New("dispatcher closed the session")

// Sessions keeps a node in session with the leader's dispatcher
// (docs/design.md §9): the session stream, heartbeats at the period the
// dispatcher names, the assignments stream and status reports, opened
// again after any failure. The agent runs one for its node; jaco-bench
// runs one for each node it simulates (bench/nodes_session.go), so that
// what a manager sees of those is what it sees of agents.
//
// Connect, Description, Assign and Statuses are required; the hooks are
// optional. The fields are read by Run and must not change once it runs.
type Sessions struct {
	// Connect returns the connection the next session runs over, and
	// what to do with it once that session has ended.
	Connect func(ctx context.Context) (conn *grpc.ClientConn, release func(), err error)
	// Description is what the node says of itself as a session opens.
	Description func() *api.NodeDescription
	// Assign is handed each complete set of assignments (its parts
	// joined, CompleteParts) and each change to it.
	Assign func(m *api.AssignmentsMessage)
	// Statuses are the replica statuses to report.
	Statuses *Statuses

	// Opened is called once the dispatcher opened session id, before
	// any of its messages is handled, with the client to make calls in
	// the session's name. What it returns, when not nil, is called as
	// that session ends.
	Opened func(id string, client api.DispatcherServiceClient) (closed func())
	// Message is handed each session message, the first one too, and the
	// heartbeat period in force once it is taken.
	Message func(m *api.SessionMessage, period time.Duration)
	// Ended is called after each session, or attempt at one, that ended
	// before Run's context did: opened says whether the dispatcher had
	// opened it, err why it ended.
	Ended func(opened bool, err error)

	// ReconnectMin and ReconnectMax bound the backoff between session
	// attempts; StatusInterval is the least time between status batches
	// unless a replica runs or ends. They mean what Config's fields of
	// the same names mean, and must be set.
	ReconnectMin, ReconnectMax, StatusInterval time.Duration

	mu sync.Mutex
	// end ends the session running now (nil between sessions).
	end context.CancelFunc
}

// Run keeps a session with the dispatcher until ctx ends: after every
// failure it backs off and opens another. Any manager forwards to the
// leader, so following the leader across an election is just
// reconnecting.
func (s *Sessions) Run(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		opened, err := s.session(ctx)
		if ctx.Err() != nil {
			return
		}
		if opened {
			failures = 0
		}
		if s.Ended != nil {
			s.Ended(opened, err)
		}
		if !backoff.Sleep(ctx, backoff.Delay(s.ReconnectMin, s.ReconnectMax, failures)) {
			return
		}
		failures++
	}
}

// Reopen ends the session running now, if any, so that the next one
// opens with a fresh Description. It reports whether one was running.
func (s *Sessions) Reopen() bool {
	s.mu.Lock()
	end := s.end
	s.mu.Unlock()
	if end != nil {
		end()
	}
	return end != nil
}

// session runs one session until it breaks or ctx ends. opened says
// whether the dispatcher opened it.
func (s *Sessions) session(ctx context.Context) (opened bool, err error) {
	conn, release, err := s.Connect(ctx)
	if err != nil {
		return false, err
	}
	defer release()
	client := api.NewDispatcherServiceClient(conn)

	ctx, cancel := context.WithCancel(ctx) // ends the streams on every return
	defer cancel()
	s.mu.Lock()
	s.end = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.end = nil
		s.mu.Unlock()
	}()
	// The parts of a session run in one group: the first to fail ends
	// them all, the streams too (they are opened under the group's ctx).
	g, ctx := errgroup.WithContext(ctx)
	stream, err := client.Session(ctx, &api.SessionRequest{Description: s.Description()})
	if err != nil {
		return false, fmt.Errorf("open session: %w", err)
	}
	first, err := stream.Recv()
	if err != nil {
		return false, fmt.Errorf("open session: %w", err)
	}
	id := first.GetSessionId()
	if s.Opened != nil {
		if closed := s.Opened(id, client); closed != nil {
			defer closed()
		}
	}
	var period atomic.Int64
	period.Store(int64(periodOr(first.GetHeartbeatPeriod().AsDuration(), DefaultHeartbeatPeriod)))
	if s.Message != nil {
		s.Message(first, time.Duration(period.Load()))
	}

	g.Go(func() error {
		for {
			m, err := stream.Recv()
			if err != nil {
				return streamEnd("session", err)
			}
			if p := m.GetHeartbeatPeriod().AsDuration(); p > 0 {
				period.Store(int64(p))
			}
			if s.Message != nil {
				s.Message(m, time.Duration(period.Load()))
			}
		}
	})
	g.Go(func() error {
		for {
			p := time.Duration(period.Load())
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(p):
			}
			hctx, hcancel := context.WithTimeout(ctx, p)
			resp, err := client.Heartbeat(hctx, &api.HeartbeatRequest{SessionId: id})
			hcancel()
			if err != nil {
				return fmt.Errorf("heartbeat: %w", err)
			}
			if p := resp.GetPeriod().AsDuration(); p > 0 {
				period.Store(int64(p))
			}
		}
	})
	g.Go(func() error {
		as, err := client.Assignments(ctx, &api.AssignmentsRequest{SessionId: id})
		if err != nil {
			return fmt.Errorf("open assignments: %w", err)
		}
		var parts CompleteParts
		for {
			m, err := as.Recv()
			if err != nil {
				return streamEnd("assignments", err)
			}
			if m = parts.Add(m); m != nil {
				s.Assign(m)
			}
		}
	})
	g.Go(func() error {
		return s.Statuses.run(ctx, s.StatusInterval, func(ctx context.Context, updates []*api.TaskStatusUpdate) error {
			_, err := client.UpdateTaskStatus(ctx, &api.UpdateTaskStatusRequest{SessionId: id, Updates: updates})
			if err != nil {
				return fmt.Errorf("update task status: %w", err)
			}
			return nil
		})
	})
	return true, g.Wait()
}

func periodOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// streamEnd names why a stream from the dispatcher ended.
func streamEnd(name string, err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("%s stream: %w", name, errSessionClosed)
	}
	return fmt.Errorf("%s stream: %w", name, err)
}
