package manager

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/proxy"
	"github.com/jaco-project/jaco/manager/backup"
	"github.com/jaco-project/jaco/manager/controlapi"
	"github.com/jaco-project/jaco/manager/dispatcher"
	"github.com/jaco-project/jaco/manager/jointoken"
	"github.com/jaco-project/jaco/manager/membership"
	"github.com/jaco-project/jaco/manager/netalloc"
	"github.com/jaco-project/jaco/manager/orchestrator"
	"github.com/jaco-project/jaco/manager/rolemanager"
	"github.com/jaco-project/jaco/manager/scheduler"
	"github.com/jaco-project/jaco/manager/state/raft"
	"github.com/jaco-project/jaco/manager/volumemove"
)

// joinTokenSweepInterval is how often the leader deletes spent join tokens.
const joinTokenSweepInterval = time.Minute

// assemble builds the manager's services (m.services) and returns its
// leader subsystems, in start order. Each part gets the narrow view of the
// raft member and of the other parts it needs, and nothing else: the
// subsystems meet in the store (docs/design.md §8).
func (m *Manager) assemble(o options) []Subsystem {
	st, log := m.store, o.logger
	members := membership.New(st, raftMembership{Node: m.raft, voters: m.voters}, log.With("component", "membership"),
		membership.WithCertLifetime(o.certLifetime))
	dispOpts := []dispatcher.Option{
		dispatcher.WithLogger(log.With("component", "dispatcher")),
		dispatcher.WithManagers(m.managerAddrs),
		dispatcher.WithNodeDialer(func(addr string) (*grpc.ClientConn, error) { return m.dial(addr) }),
		dispatcher.WithVolumeMoveReports(func(ctx context.Context, nodeID string, r *api.ReportVolumeMoveRequest, now time.Time) error {
			return volumemove.Report(ctx, st, nodeID, r, now)
		}),
	}
	if o.heartbeatPeriod > 0 {
		dispOpts = append(dispOpts, dispatcher.WithHeartbeatPeriod(o.heartbeatPeriod))
	}
	disp := dispatcher.New(st, dispOpts...)
	control := controlapi.New(st, controlapi.WithNodeRemover(members), controlapi.WithEventLog(m.events),
		controlapi.WithMinBackupInterval(o.minBackupInterval),
		controlapi.WithNodeDialer(func(_ context.Context, addr string) (*grpc.ClientConn, error) { return m.dial(addr) }))

	backups := backup.NewServer(m.raft, st)
	router := proxy.NewLeaderRouter(m)
	m.admission = api.NewRaftProxyAdmissionServiceServer(admissionService{members: members}, router)
	m.raftService = raft.NewService(m.raft)
	m.services = map[string]any{
		api.ControlService_ServiceDesc.ServiceName:    api.NewRaftProxyControlServiceServer(control, router),
		api.RaftService_ServiceDesc.ServiceName:       m.raftService,
		api.MembershipService_ServiceDesc.ServiceName: api.NewRaftProxyMembershipServiceServer(members, router),
		api.DispatcherService_ServiceDesc.ServiceName: api.NewRaftProxyDispatcherServiceServer(disp, router),
		api.BackupService_ServiceDesc.ServiceName:     backup.NameLostLeader(api.NewRaftProxyBackupServiceServer(backups, router), m.forwardedLeader, log.With("component", "backup")),
		api.AdmissionService_ServiceDesc.ServiceName:  m.admission,
	}

	subsystems := []Subsystem{
		{Name: "voter-reconciler", Run: m.voters.Run},
		{Name: "join-token-sweeper", Run: func(ctx context.Context) {
			jointoken.RunSweeper(ctx, st, joinTokenSweepInterval, log.With("component", "join-token-sweeper"))
		}},
	}
	if o.coreOnly {
		m.collect(m.raft.Collector(), st.Collector(), disp.Collector())
		return subsystems
	}
	roles := rolemanager.NewRoleReconciler(rolemanager.RoleConfig{
		Store:     st,
		Raft:      m.raft,
		Members:   m.voters,
		NewRaftID: raft.NewRaftID,
		Logger:    log.With("component", "role-reconciler"),
	})
	sched := scheduler.New(st, scheduler.WithLogger(log.With("component", "scheduler")))
	orch := orchestrator.New(st, orchestrator.WithLogger(log.With("component", "orchestrator")),
		orchestrator.WithNodeRemover(members))
	scheduled := backup.NewScheduler(backups, st, m.raft.NodeID(), log.With("component", "backup-scheduler"))
	m.collect(m.raft.Collector(), st.Collector(), disp.Collector(), sched.Collector(), orch.Collector(), scheduled.Collector())
	return append(subsystems,
		Subsystem{Name: "dispatcher", Run: disp.Run},
		Subsystem{Name: "scheduler", Run: sched.Run},
		Subsystem{Name: "orchestrator", Run: orch.Run},
		Subsystem{Name: "role-reconciler", Run: roles.Run},
		Subsystem{Name: "overlay-blocks", Run: netalloc.New(st, netalloc.WithLogger(log.With("component", "overlay-blocks"))).Run},
		Subsystem{Name: "backup-scheduler", Run: scheduled.Run},
		Subsystem{Name: "volume-mover", Run: volumemove.New(st, log.With("component", "volume-mover")).Run},
	)
}

// raftMembership is the raft member as membership needs it: joins add
// learners directly, removals and handovers go through the voter
// reconciler, which keeps the voter set safe.
type raftMembership struct {
	*raft.Node
	voters *rolemanager.VoterReconciler
}

func (r raftMembership) RemoveMember(ctx context.Context, raftID uint64) error {
	return r.voters.RemoveMember(ctx, raftID)
}

func (r raftMembership) HandOver(ctx context.Context) (uint64, error) { return r.voters.HandOver(ctx) }

// admissionService serves formation admissions (AdmissionService) through
// membership, on the leader.
type admissionService struct {
	api.UnimplementedAdmissionServiceServer
	members *membership.Server
}

func (s admissionService) Admit(ctx context.Context, req *api.AdmitRequest) (*api.JoinResponse, error) {
	return s.members.Admit(ctx, req)
}

// managerAddrs are the raft members' addresses, which agents keep to find
// the cluster again.
func (m *Manager) managerAddrs() []string { return api.MemberAddrs(m.raft.Members()) }

// forwardedLeader names the leader this manager forwards calls to, "" when
// it leads itself or knows no leader.
func (m *Manager) forwardedLeader() string {
	members, _ := m.Members()
	for _, mem := range members {
		if mem.Leader && mem.RaftId != m.raft.RaftID() {
			return fmt.Sprintf("%s (%s)", mem.Hostname, mem.NodeId)
		}
	}
	return ""
}
