package controlapi

import (
	"cmp"
	"context"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/api/rollout"
	"github.com/jaco-project/jaco/manager/state/store"
)

// watchInterval is the least time between two messages of a WatchService
// stream: a roll changes a service's tasks in bursts (one replica stopped,
// its replacement created, assigned, started), and a client redrawing its
// progress needs the outcome, not every step.
const watchInterval = 100 * time.Millisecond

// WatchService streams where a service and its slots stand: at once, then
// after every change to the service or its tasks, at most one message per
// watchInterval unless a replica ran or ended or the service changed
// (those go at once), until the service is removed (a last message says so) or
// the caller hangs up. It reads this manager's store, so a follower may
// answer a moment behind the leader: clients compare meta.version with
// what a write returned.
func (s *Server) WatchService(req *api.WatchServiceRequest, stream grpc.ServerStreamingServer[api.WatchServiceMessage]) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	var id string
	s.store.View(func(tx store.ReadTx) { id = findService(tx, req.Service).GetId() })
	if id == "" {
		return notFound("service", req.Service)
	}
	// Registered before the first read: no change after it is missed (one
	// removed in between makes that read say removed).
	events := s.store.Watch(ctx, serviceOrItsTasks(id))
	// The watcher's queue grows while the stream is slow to send; a
	// goroutine keeps it empty and folds what it drained into one flag,
	// so a slow caller costs nothing but staleness.
	changed, urgent := make(chan struct{}, 1), make(chan struct{}, 1)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		for e := range events {
			select {
			case changed <- struct{}{}:
			default:
			}
			if settles(e) {
				select {
				case urgent <- struct{}{}:
				default:
				}
			}
		}
	}()
	var last *api.WatchServiceMessage
	for {
		msg := s.serviceProgress(id)
		if !proto.Equal(msg, last) {
			if err := stream.Send(msg); err != nil {
				return err
			}
			last = msg
		}
		if msg.Removed {
			return nil
		}
		// Coalesce: whatever changes during the interval is in the next
		// message, unless something the caller waits for happened.
		pause := time.NewTimer(s.watchInterval)
		select {
		case <-pause.C:
		case <-urgent:
			pause.Stop()
		case <-ctx.Done():
			pause.Stop()
			return ctx.Err()
		}
		select {
		case <-changed:
		case <-closed:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return reason.Error(codes.Unavailable, reason.Unavailable,
				"this manager stopped serving while watching service %s: watch again", req.Service)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// settles reports whether e is what a client following a service waits
// for, to be sent without the interval's wait: the service itself changed
// (its update state), or a replica runs or ended.
func settles(e store.Event) bool {
	switch o := e.Object.(type) {
	case *api.Service:
		return true
	case *api.Task:
		return e.Kind == store.EventDelete || o.GetStatus().GetState() >= api.TaskState_TASK_STATE_RUNNING
	}
	return false
}

// serviceOrItsTasks selects the events about one service and its tasks.
func serviceOrItsTasks(id string) store.Filter {
	return func(e store.Event) bool {
		switch o := e.Object.(type) {
		case *api.Service:
			return o.GetId() == id
		case *api.Task:
			return o.GetServiceId() == id
		}
		return false
	}
}

// serviceProgress reads where service id and its slots stand now.
func (s *Server) serviceProgress(id string) *api.WatchServiceMessage {
	msg := &api.WatchServiceMessage{}
	s.store.View(func(tx store.ReadTx) {
		msg.Service = tx.GetService(id)
		if msg.Service == nil {
			msg.Removed = true
			return
		}
		// The stored tasks themselves: slotProgress only reads them, and
		// cloning 100 000 for each message was most of its cost.
		var tasks []*api.Task
		tx.EachTask(id, "", func(t *api.Task) bool {
			tasks = append(tasks, t)
			return true
		})
		msg.Slots = slotProgress(msg.Service, tasks)
	})
	compactSlots(msg)
	slim(msg.Service)
	withoutRegistryAuth(msg.Service)
	return msg
}

// compactSlots keeps a large service's message small (api.proto,
// WatchServiceMessage): past api.MaxListedSlots slots, those running the
// current spec within the replica count are only counted, and the others
// listed up to api.MaxListedSlots.
func compactSlots(msg *api.WatchServiceMessage) {
	if len(msg.Slots) <= api.MaxListedSlots {
		return
	}
	svc := msg.GetService()
	replicated := !api.PerNode(svc.GetSpec().GetMode())
	var listed []*api.SlotProgress
	for _, s := range msg.Slots {
		inPlace := !replicated || s.GetSlot() <= svc.GetSpec().GetReplicas()
		if inPlace && s.GetDesiredState() == api.TaskState_TASK_STATE_RUNNING &&
			s.GetState() == api.TaskState_TASK_STATE_RUNNING && s.GetSpecVersion() == svc.GetSpecVersion() {
			msg.Settled++
			if rs := s.GetRunningSince(); rs != nil && (msg.SettledRunningSince == nil || rs.AsTime().After(msg.SettledRunningSince.AsTime())) {
				msg.SettledRunningSince = rs
			}
			continue
		}
		if len(listed) == api.MaxListedSlots {
			msg.Unlisted++
			continue
		}
		listed = append(listed, s)
	}
	msg.Slots = listed
}

// slim drops from a watched service what following a roll never reads
// and what makes it large: the previous spec, and the hook bundle's files
// (each up to 1 MiB; a message goes out up to ten times a second during a
// roll). GetService has them.
func slim(svc *api.Service) {
	if svc == nil {
		return
	}
	svc.PreviousSpec = nil
	if b := svc.GetSpec().GetBundle(); b != nil {
		b.Files = nil
	}
}

// slotKey tells a service's slots apart: the slot number of a replicated
// service, the node of a global one.
type slotKey struct {
	slot   uint64
	nodeID string
}

// slotProgress describes every slot of svc that has an occupant, in slot
// (or node id) order. A slot whose replicas are all stopping (scaled away,
// or a node a global service left) is not shown. Task specs are left out:
// the service carries the spec, and a client follows a roll by
// spec_version.
func slotProgress(svc *api.Service, tasks []*api.Task) []*api.SlotProgress {
	global := api.PerNode(svc.GetSpec().GetMode())
	bySlot := map[slotKey][]*api.Task{}
	for _, t := range tasks {
		k := slotKey{slot: t.Slot}
		if global {
			k = slotKey{nodeID: t.NodeId}
		}
		bySlot[k] = append(bySlot[k], t)
	}
	var out []*api.SlotProgress
	for k, ts := range bySlot {
		if p := describeSlot(svc, ts); p != nil {
			if global {
				p.NodeId = k.nodeID
			}
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *api.SlotProgress) int {
		return cmp.Or(cmp.Compare(a.Slot, b.Slot), cmp.Compare(a.NodeId, b.NodeId))
	})
	return out
}

// describeSlot describes one slot's occupant: the newest task that should
// run (or has finished for good). During a start-first roll or a drain two
// tasks hold the slot for a while; the newer is the one the slot is
// heading for. Until the occupant runs, the newest failure in the slot of
// the same spec_version says why it is not running yet. nil when nothing
// occupies the slot.
//
// spec_version is the service's when the occupant runs a spec the
// service's would not replace (the orchestrator's test, api/rollout): a
// rollback to the spec a replica runs leaves it in place, and a client,
// which gets no task specs, must see it as current.
func describeSlot(svc *api.Service, tasks []*api.Task) *api.SlotProgress {
	slices.SortFunc(tasks, func(a, b *api.Task) int {
		return cmp.Or(a.GetMeta().GetCreatedAt().AsTime().Compare(b.GetMeta().GetCreatedAt().AsTime()),
			cmp.Compare(a.Id, b.Id))
	})
	var occ *api.Task
	for _, t := range tasks {
		switch t.DesiredState {
		case api.TaskState_TASK_STATE_RUNNING, api.TaskState_TASK_STATE_COMPLETE:
			occ = t
		}
	}
	if occ == nil {
		return nil
	}
	// Only a failure of the occupant's spec says why it may not run: one
	// of a spec since replaced (an update rolled back) says nothing.
	var failed *api.Task
	for _, t := range tasks {
		switch t.GetStatus().GetState() {
		case api.TaskState_TASK_STATE_FAILED, api.TaskState_TASK_STATE_REJECTED:
			if t.SpecVersion == occ.SpecVersion {
				failed = t
			}
		}
	}
	version := occ.SpecVersion
	if version < svc.SpecVersion && !rollout.Replaces(svc.Spec, occ.Spec) {
		version = svc.SpecVersion
	}
	why := occ
	if occ.GetStatus().GetState() < api.TaskState_TASK_STATE_RUNNING && failed != nil {
		why = failed
	}
	return &api.SlotProgress{
		Slot:         occ.Slot,
		NodeId:       occ.NodeId,
		TaskId:       occ.Id,
		State:        occ.GetStatus().GetState(),
		DesiredState: occ.DesiredState,
		SpecVersion:  version,
		RunningSince: proto.CloneOf(occ.RunningSince), // occ is the store's own
		Message:      why.GetStatus().GetMessage(),
		Reason:       why.GetStatus().GetReason(),
		JobIteration: occ.GetJobIteration(),
	}
}
