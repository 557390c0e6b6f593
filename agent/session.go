package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/backoff"
)

// errSessionClosed is a session stream the dispatcher ended.
var errSessionClosed = errors.New("dispatcher closed the session")

// runSessions keeps a session with the dispatcher until ctx ends: it
// tries the managers in turn, moving to the next after every failure and
// backing off between attempts. Any manager forwards to the leader, so
// following the leader across an election is just reconnecting.
func (a *Agent) runSessions(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		addr := a.nextManager()
		established, err := a.session(ctx, addr)
		if ctx.Err() != nil {
			return
		}
		if established {
			failures = 0
			if a.cfg.Disconnected != nil {
				a.cfg.Disconnected()
			}
		}
		a.log.Warn("dispatcher session ended", "address", addr, "err", err)
		if !a.cfg.pause(ctx, failures) {
			return
		}
		failures++
	}
}

// pause waits before retry n+1 of a session, or of a runtime call the
// agent keeps trying: exponential from ReconnectMin, capped at
// ReconnectMax, with up to 50% jitter so that nodes cut off together do
// not come back together. It returns false when ctx ends first.
func (c *Config) pause(ctx context.Context, n int) bool {
	return backoff.Sleep(ctx, backoff.Delay(c.ReconnectMin, c.ReconnectMax, n))
}

// nextManager returns the manager to try and moves the rotation on.
func (a *Agent) nextManager() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.managers) == 0 {
		return ""
	}
	addr := a.managers[a.next%len(a.managers)]
	a.next++
	return addr
}

// setManagers adopts the dispatcher's list of managers and keeps it in
// the db for the next start.
func (a *Agent) setManagers(addrs []string) {
	if len(addrs) == 0 {
		return
	}
	a.mu.Lock()
	if !slices.Equal(a.managers, addrs) {
		a.managers = slices.Clone(addrs)
		a.next = 0
	}
	save := !slices.Equal(a.saved, addrs)
	if save {
		a.saved = slices.Clone(addrs)
	}
	a.mu.Unlock()
	if !save {
		return
	}
	if err := a.db.SetManagers(addrs); err != nil {
		a.log.Error("keep managers' addresses", "err", err)
	}
	if a.cfg.ManagersChanged != nil {
		a.cfg.ManagersChanged(slices.Clone(addrs))
	}
}

// managerConn is the connection a session to addr uses, and what to do
// with it when the session ends: nothing to a shared one.
func (a *Agent) managerConn(ctx context.Context, addr string) (*grpc.ClientConn, func(), error) {
	if a.cfg.ManagerConn != nil {
		conn, err := a.cfg.ManagerConn(addr)
		return conn, func() {}, err
	}
	conn, err := a.cfg.Dial(ctx, addr)
	if err != nil {
		return nil, nil, err
	}
	return conn, func() { conn.Close() }, nil
}

// Managers are the managers' addresses the agent holds sessions with, in
// the order it tries them.
func (a *Agent) Managers() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.managers)
}

// session runs one session through the manager at addr until it breaks
// or ctx ends. established says whether the dispatcher opened it.
func (a *Agent) session(ctx context.Context, addr string) (established bool, err error) {
	if addr == "" {
		return false, errors.New("no manager address known")
	}
	conn, release, err := a.managerConn(ctx, addr)
	if err != nil {
		return false, fmt.Errorf("dial manager %s: %w", addr, err)
	}
	defer release()
	client := api.NewDispatcherServiceClient(conn)

	ctx, cancel := context.WithCancel(ctx) // ends the streams on every return
	defer cancel()
	a.mu.Lock()
	a.endSession = cancel
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.endSession, a.reportMove = nil, nil
		a.mu.Unlock()
	}()
	// The parts of a session run in one group: the first to fail ends
	// them all, the streams too (they are opened under the group's ctx).
	g, ctx := errgroup.WithContext(ctx)
	stream, err := client.Session(ctx, &api.SessionRequest{Description: a.cfg.Description()})
	if err != nil {
		return false, fmt.Errorf("open session: %w", err)
	}
	first, err := stream.Recv()
	if err != nil {
		return false, fmt.Errorf("open session: %w", err)
	}
	id := first.GetSessionId()
	a.log.Info("dispatcher session open", "address", addr, "session_id", id)
	a.inSession.Store(true)
	defer a.inSession.Store(false)
	a.mu.Lock()
	a.reportMove = func(ctx context.Context, r *api.ReportVolumeMoveRequest) error {
		r.SessionId = id
		_, err := client.ReportVolumeMove(ctx, r)
		return err
	}
	a.mu.Unlock()
	a.setManagers(first.GetManagers())
	a.followOverlay(first)
	var period atomic.Int64
	period.Store(int64(periodOr(first.GetHeartbeatPeriod().AsDuration(), DefaultHeartbeatPeriod)))
	a.monitors.Set(first.GetMonitors(), time.Duration(period.Load()))

	g.Go(func() error {
		for {
			m, err := stream.Recv()
			if err != nil {
				return streamEnd("session", err)
			}
			a.setManagers(m.GetManagers())
			a.followOverlay(m)
			if p := m.GetHeartbeatPeriod().AsDuration(); p > 0 {
				period.Store(int64(p))
			}
			a.monitors.Set(m.GetMonitors(), time.Duration(period.Load()))
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
				a.worker.apply(m)
			}
		}
	})
	g.Go(func() error {
		return a.reporter.run(ctx, a.cfg.StatusInterval, func(ctx context.Context, updates []*api.TaskStatusUpdate) error {
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

// followOverlay hands the overlay and the networks what a session message
// says of them.
func (a *Agent) followOverlay(m *api.SessionMessage) {
	if a.cfg.Overlay != nil && m.GetNode() != nil {
		a.cfg.Overlay(m.GetNode(), m.GetOverlayPeers())
	}
	if a.cfg.Networks != nil && m.GetNode() != nil {
		a.cfg.Networks(m.GetNode(), m.GetNetworks(), m.GetEndpoints())
	}
	if a.cfg.RemovedVolumes != nil && len(m.GetNode().GetRemovedVolumes()) > 0 {
		a.cfg.RemovedVolumes(m.GetNode().GetRemovedVolumes())
	}
	if a.cfg.VolumeMoves != nil && m.GetNode() != nil {
		a.cfg.VolumeMoves(m.GetNode().GetVolumeMoves())
	}
}

// ReportVolumeMove tells the dispatcher of a volume copy this node
// receives (docs/adr/0064-volume-move.md), through the session running
// now.
func (a *Agent) ReportVolumeMove(ctx context.Context, r *api.ReportVolumeMoveRequest) error {
	a.mu.Lock()
	report := a.reportMove
	a.mu.Unlock()
	if report == nil {
		return errors.New("no session with a dispatcher")
	}
	if err := report(ctx, r); err != nil {
		return fmt.Errorf("report volume move: %w", err)
	}
	return nil
}

// Redescribe ends the session running now, if any, so that the next one
// opens with a fresh Description: the node's overlay broke or mended.
func (a *Agent) Redescribe() {
	a.mu.Lock()
	end := a.endSession
	a.mu.Unlock()
	if end != nil {
		a.log.Info("describing the node again: reopening the session")
		end()
	}
}
