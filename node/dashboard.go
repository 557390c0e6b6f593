package node

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/access"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca/token"
	"github.com/jaco-project/jaco/manager/dashboard"
)

// The dashboard (docs/design.md §17, docs/adr/0036-dashboard.md): with
// Config.DashboardAddr set, every daemon serves it from start, so that
// the page of a worker, an uninitialized or a locked node says why it
// shows nothing; a manager shows its own store.

// serveDashboard starts the dashboard when one is configured.
func (n *Node) serveDashboard() error {
	if n.cfg.DashboardAddr == "" {
		return nil
	}
	srv, err := dashboard.Listen(dashboard.Config{
		Addr:               n.cfg.DashboardAddr,
		Source:             n.dashboardSource,
		OperatorTokenValid: n.operatorTokenValid,
		Logger:             n.log.With("component", "dashboard"),
	})
	if err != nil {
		return err
	}
	n.dashboardSrv = srv
	return nil
}

// dashboardSource is the running manager, or the refusal a gRPC caller
// of a manager's service would get in this state.
func (n *Node) dashboardSource() (dashboard.Source, error) {
	if m := n.Manager(); m != nil {
		return m, nil
	}
	state := n.accessState()
	if state == access.Managing {
		state = access.Worker // the manager stopped in between: a demotion
	}
	return nil, access.NotServed(state)
}

// operatorTokenValid reports whether tok is the operator token of the
// cluster this daemon's manager holds; false without a manager. The gRPC
// TCP path (tcpIdentity) and the dashboard login both ask it.
func (n *Node) operatorTokenValid(tok string) bool {
	m := n.Manager()
	if m == nil {
		return false
	}
	t, err := token.Parse(tok)
	if err != nil {
		return false
	}
	return m.OperatorTokenValid(t)
}

// DashboardLogin makes a one-time login URL for the local socket's user,
// the trusted admin (`jaco dashboard`).
func (s nodeService) DashboardLogin(context.Context, *api.DashboardLoginRequest) (*api.DashboardLoginResponse, error) {
	srv := s.n.dashboardSrv
	if srv == nil {
		return nil, reason.Error(codes.FailedPrecondition, reason.DashboardOff,
			"this daemon serves no dashboard: start jacod with --dashboard-addr 127.0.0.1:PORT")
	}
	url, expires := srv.LoginURL()
	return &api.DashboardLoginResponse{Url: url, Address: srv.URL(), ExpiresAt: timestamppb.New(expires)}, nil
}
