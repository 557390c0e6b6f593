package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/backoff"
)

// newSessions makes the agent's sessions: through each manager it knows
// in turn, moving to the next after every failure, over the node's
// connection to it (Config.ManagerConn) or one of their own.
func (a *Agent) newSessions() *Sessions {
	// addr is the manager of the session being opened or running; only
	// Run's goroutine, which calls every hook below but Assign, uses it.
	var addr string
	return &Sessions{
		Connect: func(ctx context.Context) (*grpc.ClientConn, func(), error) {
			addr = a.nextManager()
			if addr == "" {
				return nil, nil, errors.New("no manager address known")
			}
			conn, release, err := a.managerConn(ctx, addr)
			if err != nil {
				return nil, nil, fmt.Errorf("dial manager %s: %w", addr, err)
			}
			return conn, release, nil
		},
		Description: a.cfg.Description,
		Assign:      func(m *api.AssignmentsMessage) { a.worker.apply(m) },
		Statuses:    a.statuses,
		Opened: func(id string, client api.DispatcherServiceClient) func() {
			a.log.Info("dispatcher session open", "address", addr, "session_id", id)
			a.inSession.Store(true)
			a.mu.Lock()
			a.reportMove = func(ctx context.Context, r *api.ReportVolumeMoveRequest) error {
				r.SessionId = id
				_, err := client.ReportVolumeMove(ctx, r)
				return err
			}
			a.mu.Unlock()
			return func() {
				a.inSession.Store(false)
				a.mu.Lock()
				a.reportMove = nil
				a.mu.Unlock()
			}
		},
		Message: func(m *api.SessionMessage, period time.Duration) {
			a.setManagers(m.GetManagers())
			a.followOverlay(m)
			a.monitors.Set(m.GetMonitors(), period)
		},
		Ended: func(opened bool, err error) {
			if opened && a.cfg.Disconnected != nil {
				a.cfg.Disconnected()
			}
			a.log.Warn("dispatcher session ended", "address", addr, "err", err)
		},
		ReconnectMin:   a.cfg.ReconnectMin,
		ReconnectMax:   a.cfg.ReconnectMax,
		StatusInterval: a.cfg.StatusInterval,
	}
}

// pause waits before retry n+1 of a runtime call the agent keeps trying,
// as Sessions does between sessions: exponential from ReconnectMin,
// capped at ReconnectMax, with up to 50% jitter so that nodes cut off
// together do not come back together. It returns false when ctx ends
// first.
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
	if a.sessions.Reopen() {
		a.log.Info("describing the node again: reopening the session")
	}
}
