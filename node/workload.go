package node

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/agent"
	"github.com/jaco-project/jaco/agent/exec"
	ctrd "github.com/jaco-project/jaco/agent/exec/containerd"
	"github.com/jaco-project/jaco/agent/exec/hooks"
	"github.com/jaco-project/jaco/agent/isolation"
	"github.com/jaco-project/jaco/agent/netattach"
	"github.com/jaco-project/jaco/agent/netplane"
	"github.com/jaco-project/jaco/agent/volumemove"
	"github.com/jaco-project/jaco/agent/volumes"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/paging"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/node/roles"
)

// startAgent starts this node's agent once it belongs to a cluster: every
// node runs replicas. It runs until the node stops; replicas outlive it.
func (n *Node) startAgent() error {
	n.agentMu.Lock()
	defer n.agentMu.Unlock()
	if n.agent.Load() != nil {
		return nil
	}
	_, certPEM, _, err := ca.LoadNodeFiles(n.cfg.nodeDir())
	if err != nil {
		return fmt.Errorf("agent: node certificate: %w", err)
	}
	id, err := ca.IdentityFromPEM(certPEM)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	managers, err := roles.LoadManagers(n.cfg.managersPath())
	if err != nil {
		return err
	}
	if n.Manager() != nil {
		managers = append([]string{n.advertise}, managers...)
	}
	// The plane asks the agent, made below, to send the node's
	// description again; it runs, and so asks, only once a is set.
	var a *agent.Agent
	plane := netplane.New(netplane.Config{
		NodeID:     id.NodeID,
		KeyPath:    n.cfg.dir().OverlayKey(),
		Sealer:     n.keys.OverlaySealer,
		NoOverlay:  n.cfg.NoOverlay,
		ListenPort: n.cfg.OverlayPort,
		Interface:  n.cfg.OverlayInterface,
		Redescribe: func() { a.Redescribe() },
		Logger:     n.log,
	})
	ctx, cancel := context.WithCancel(context.Background())
	runtimes, iso, err := n.runtimes(ctx, id.NodeID, plane)
	if err != nil {
		cancel()
		return err
	}
	// The volume mover's report goes through the agent, made below; it is
	// set before the agent runs, so before any order can come.
	var reportMove func(context.Context, *api.ReportVolumeMoveRequest) error
	mover := &volumemove.Mover{
		NodeID: id.NodeID, Dir: volumes.Dir(n.cfg.volumesDir()), Orders: &volumemove.Orders{},
		Dial:   func(_ context.Context, addr string) (*grpc.ClientConn, error) { return n.dialPeer(addr) },
		Report: func(ctx context.Context, r *api.ReportVolumeMoveRequest) error { return reportMove(ctx, r) },
		Log:    n.log.With("component", "volumes"),
	}
	mover.Start(ctx, &n.wg)
	a, err = agent.New(agent.Config{
		NodeID:   id.NodeID,
		NodeName: n.cfg.NodeName,
		Dir:      n.cfg.dir().Agent(),
		Dial: func(_ context.Context, addr string) (*grpc.ClientConn, error) {
			return n.dialPeer(addr)
		},
		ManagerConn: n.managerConns.Get,
		Managers:    managers,
		// The dispatcher tells of a moved manager at once; the role
		// check, every RoleCheckInterval.
		ManagersChanged: n.roles.ManagersChanged,
		Runtimes:        runtimes,
		Description: func() *api.NodeDescription {
			d := agent.MachineDescription(runtimes)
			netplane.DescribeIsolation(d, iso)
			plane.Describe(d)
			return d
		},
		Overlay:        plane.FollowOverlay,
		Networks:       plane.FollowNetworks,
		RemovedVolumes: newVolumeSweeper(ctx, &n.wg, n.cfg.volumesDir(), n.log).sweep,
		VolumeMoves:    mover.Follow,
		Disconnected:   plane.Disconnected,
		Logger:         n.log,
	})
	if err != nil {
		cancel()
		return err
	}
	reportMove = a.ReportVolumeMove
	n.volumeSource.Store(&volumemove.Source{NodeID: id.NodeID, Dir: mover.Dir, Orders: mover.Orders})
	n.agent.Store(a)
	n.plane.Store(plane)
	n.agentStop = cancel
	n.wg.Go(func() { plane.Run(ctx) })
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := a.Run(ctx); err != nil && ctx.Err() == nil {
			select {
			case n.fatal <- fmt.Errorf("agent: %w", err):
			default:
			}
		}
	}()
	return nil
}

// runtimes are hooks always, and containerd when an address is set. A
// configured containerd that cannot be used is logged as an error and the
// node runs without it: the node stays a member (it may be a manager the
// cluster needs), and the scheduler, seeing no containerd runtime in its
// description, says so for every image replica it cannot place. With
// containerd comes the node's network isolation (nil without it). Both
// attach replicas to overlay networks through networks.
func (n *Node) runtimes(ctx context.Context, nodeID string, networks exec.Networks) ([]exec.Runtime, *isolation.Ruleset, error) {
	hookOpts := []hooks.Option{hooks.WithLogger(n.log.With("runtime", "hooks")), hooks.WithVolumesDir(n.cfg.volumesDir())}
	if att, err := netattach.New(n.cfg.dir().OverlayLeases(), ctrd.DefaultCNIBinDirs); err != nil {
		n.log.Warn("hook bundles cannot join overlay networks", "err", err)
	} else {
		hookOpts = append(hookOpts, hooks.WithNetworks(networks, att, n.cfg.dir().HooksNetns()))
	}
	rts := []exec.Runtime{hooks.New(hookOpts...)}
	if n.cfg.ContainerdAddress == "" {
		return rts, nil, nil
	}
	names, err := ctrd.NamesFor(nodeID, n.cfg.ContainerSubnet)
	if err != nil {
		n.log.Error("containerd runtime unavailable; this node runs hook bundles only", "err", err)
		return rts, nil, nil
	}
	iso := netplane.LoadIsolation(names.Network, n.log)
	rt, err := ctrd.New(ctx, n.cfg.ContainerdAddress,
		ctrd.WithIsolation(iso),
		ctrd.WithNetworks(networks),
		ctrd.WithNodeID(nodeID),
		ctrd.WithSubnet(n.cfg.ContainerSubnet),
		ctrd.WithStateDir(n.cfg.dir().ContainerdState()),
		ctrd.WithVolumesDir(n.cfg.volumesDir()),
		ctrd.WithLogger(n.log),
	)
	if err != nil {
		n.log.Error("containerd runtime unavailable; this node runs hook bundles only",
			"containerd", n.cfg.ContainerdAddress, "err", err)
		return rts, nil, nil
	}
	n.containerd = rt
	return append(rts, rt), iso, nil
}

// stopAgent stops the agent's goroutines (not its replicas).
func (n *Node) stopAgent() {
	n.agentMu.Lock()
	defer n.agentMu.Unlock()
	if n.agentStop != nil {
		n.agentStop()
	}
}

// agentService serves AgentService through whatever agent runs now.
type agentService struct {
	api.UnimplementedAgentServiceServer
	n *Node
}

// running is the agent that runs now.
func (s agentService) running() (*agent.Agent, error) {
	a := s.n.agent.Load()
	if a == nil {
		if err := s.n.roles.CertExpiredRefusal(); err != nil {
			return nil, err
		}
		return nil, reason.Error(codes.FailedPrecondition, reason.ClusterUninitialized, "this node runs no agent yet")
	}
	return a, nil
}

func (s agentService) Logs(req *api.LogsRequest, stream grpc.ServerStreamingServer[api.LogsMessage]) error {
	a, err := s.running()
	if err != nil {
		return err
	}
	return a.Server().Logs(req, stream)
}

func (s agentService) ListLocalReplicas(_ context.Context, req *api.ListLocalReplicasRequest) (*api.ListLocalReplicasResponse, error) {
	a, err := s.running()
	if err != nil {
		return nil, err
	}
	return localReplicasPage(a.Replicas(), req)
}

// ReadVolume serves a volume moving from this node to the caller
// (docs/adr/0064-volume-move.md).
func (s agentService) ReadVolume(req *api.ReadVolumeRequest, stream grpc.ServerStreamingServer[api.VolumeChunk]) error {
	if _, err := s.running(); err != nil {
		return err
	}
	src := s.n.volumeSource.Load()
	if src == nil {
		return reason.Error(codes.FailedPrecondition, reason.ClusterUninitialized, "this node runs no agent yet")
	}
	return src.ReadVolume(req, stream)
}

func (s agentService) OverlayStatus(ctx context.Context, _ *api.OverlayStatusRequest) (*api.OverlayStatusResponse, error) {
	plane := s.n.plane.Load()
	if plane == nil {
		return nil, reason.Error(codes.FailedPrecondition, reason.ClusterUninitialized, "this node runs no agent yet")
	}
	return plane.OverlayStatus(ctx)
}

// localReplicasPage is the page of replicas req asks for, in id order as
// every listing pages (docs/adr/0019-list-paging.md).
func localReplicasPage(replicas []*api.Task, req *api.ListLocalReplicasRequest) (*api.ListLocalReplicasResponse, error) {
	after, err := paging.After(req.PageToken)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(replicas, func(a, b *api.Task) int { return strings.Compare(a.Id, b.Id) })
	page := paging.NewPage[*api.Task](req.PageSize)
	for _, t := range replicas {
		if t.Id > after && !page.Add(t.Id, t) {
			break
		}
	}
	return &api.ListLocalReplicasResponse{Replicas: page.Items, NextPageToken: page.NextToken()}, nil
}

func (s agentService) LoadImage(stream grpc.ClientStreamingServer[api.LoadImageRequest, api.LoadImageResponse]) error {
	a, err := s.running()
	if err != nil {
		return err
	}
	return a.Server().LoadImage(stream)
}
