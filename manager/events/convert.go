package events

import (
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
	"github.com/jaco-project/jaco/manager/state/store"
)

// The object types events report, as WatchEventsRequest.types names
// them; TypeStore is the type of a reset.
const (
	TypeNode    = "node"
	TypeService = "service"
	TypeTask    = "task"
	TypeCluster = "cluster"
	TypeSecret  = "secret"
	TypeConfig  = "config"
	TypeNetwork = "network"
	TypeVolume  = "volume"
	TypeStore   = "store"
)

// Types are the object types a caller may filter on.
var Types = []string{TypeNode, TypeService, TypeTask, TypeCluster, TypeSecret, TypeConfig, TypeNetwork, TypeVolume}

// The actions of an event.
const (
	ActionCreate = "create"
	ActionUpdate = "update"
	ActionRemove = "remove"
	// ActionState is an update of a task or node that changed its state.
	ActionState = "state"
	// ActionReset is a store replaced by a snapshot (TypeStore).
	ActionReset = "reset"
)

// FromStore converts an applied store change, stamped at, into an event;
// nil for a change that is not reported (join tokens: credentials), for
// which nothing is built: every token issued passes here, on every
// manager. It only reads e's objects, which may be the stored ones (ADR
// 0031), and copies out what it keeps.
func FromStore(e store.Event, at time.Time) *api.Event {
	var action string
	switch e.Kind {
	case store.EventCreate:
		action = ActionCreate
	case store.EventUpdate:
		action = ActionUpdate
	case store.EventDelete:
		action = ActionRemove
	case store.EventReset:
		return &api.Event{Time: timestamppb.New(at), Index: e.Index, Type: TypeStore, Action: ActionReset,
			Message: "a snapshot from the leader replaced this manager's store: the changes it covered have no events"}
	default:
		return nil
	}
	newEvent := func(typ, name string) *api.Event {
		return &api.Event{Time: timestamppb.New(at), Index: e.Index, Action: action, Id: e.Object.GetId(), Type: typ, Name: name}
	}
	switch obj := e.Object.(type) {
	case *api.Service:
		ev := newEvent(TypeService, obj.GetSpec().GetName())
		old, _ := e.Old.(*api.Service)
		describeService(ev, old, obj)
		return ev
	case *api.Task:
		// Named by node id: the event has no hostnames at hand.
		ev := newEvent(TypeTask, api.ReplicaName(obj, obj.GetNodeId()))
		ev.ServiceId, ev.ServiceName, ev.NodeId = obj.GetServiceId(), obj.GetServiceName(), obj.GetNodeId()
		old, _ := e.Old.(*api.Task)
		describeTask(ev, old, obj)
		return ev
	case *api.Node:
		ev := newEvent(TypeNode, obj.GetHostname())
		old, _ := e.Old.(*api.Node)
		describeNode(ev, old, obj)
		return ev
	case *api.Cluster:
		ev := newEvent(TypeCluster, "")
		old, _ := e.Old.(*api.Cluster)
		describeCluster(ev, old, obj)
		return ev
	case *api.Network:
		return newEvent(TypeNetwork, obj.GetSpec().GetName())
	case *api.Secret:
		return newEvent(TypeSecret, obj.GetSpec().GetName())
	case *api.Config:
		return newEvent(TypeConfig, obj.GetSpec().GetName())
	case *api.Volume:
		// The node it lives on, once the scheduler recorded it.
		ev := newEvent(TypeVolume, obj.GetSpec().GetName())
		ev.NodeId = obj.GetNodeId()
		return ev
	}
	return nil
}

func describeService(ev *api.Event, old, s *api.Service) {
	ev.Message = s.GetUpdateStatus().GetMessage()
	if old == nil {
		return
	}
	spec, was := s.GetSpec(), old.GetSpec()
	change(ev, "replicas", strconv.FormatUint(was.GetReplicas(), 10), strconv.FormatUint(spec.GetReplicas(), 10))
	change(ev, "image", was.GetImage(), spec.GetImage())
	change(ev, "spec_version", strconv.FormatUint(old.GetSpecVersion(), 10), strconv.FormatUint(s.GetSpecVersion(), 10))
	change(ev, "update_state", enumword.Of(old.GetUpdateStatus().GetState()), enumword.Of(s.GetUpdateStatus().GetState()))
	if old.GetUpdateStatus().GetMessage() == ev.Message {
		ev.Message = "" // said before: an event reports what changed
	}
}

func describeTask(ev *api.Event, old, t *api.Task) {
	st := t.GetStatus()
	ev.To, ev.Reason, ev.Message = enumword.Of(st.GetState()), st.GetReason(), st.GetMessage()
	if old == nil {
		return
	}
	if from := enumword.Of(old.GetStatus().GetState()); from != ev.To {
		ev.Action, ev.From = ActionState, from
	} else {
		ev.To = ""
	}
	change(ev, "desired_state", enumword.Of(old.GetDesiredState()), enumword.Of(t.GetDesiredState()))
	change(ev, "node", old.GetNodeId(), t.GetNodeId())
}

func describeNode(ev *api.Event, old, n *api.Node) {
	ev.To, ev.Message = enumword.Of(n.GetStatus().GetState()), n.GetStatus().GetMessage()
	if old == nil {
		return
	}
	if from := enumword.Of(old.GetStatus().GetState()); from != ev.To {
		ev.Action, ev.From = ActionState, from
	} else {
		ev.To = ""
		if old.GetStatus().GetMessage() == ev.Message {
			ev.Message = ""
		}
	}
	change(ev, "role", enumword.Of(old.GetRole()), enumword.Of(n.GetRole()))
	change(ev, "desired_role", enumword.Of(old.GetDesiredRole()), enumword.Of(n.GetDesiredRole()))
	change(ev, "availability", enumword.Of(old.GetAvailability()), enumword.Of(n.GetAvailability()))
	change(ev, "drain", enumword.Of(old.GetDrain().GetState()), enumword.Of(n.GetDrain().GetState()))
}

// describeCluster names the settings an operator changes; the cluster's
// keys and token hash are never put in an event.
func describeCluster(ev *api.Event, old, c *api.Cluster) {
	if old == nil {
		return
	}
	change(ev, "autolock", strconv.FormatBool(old.GetAutolock()), strconv.FormatBool(c.GetAutolock()))
	change(ev, "max_replicas_per_service", strconv.FormatUint(old.GetMaxReplicasPerService(), 10),
		strconv.FormatUint(c.GetMaxReplicasPerService(), 10))
	change(ev, "max_services", strconv.FormatUint(old.GetMaxServices(), 10), strconv.FormatUint(c.GetMaxServices(), 10))
	change(ev, "ca_rotation", rotationPhase(old), rotationPhase(c))
}

// rotationPhase is the phase of c's CA rotation in a word (docs/adr/0041),
// "none" when none is under way.
func rotationPhase(c *api.Cluster) string {
	if c.GetCaRotation() == nil {
		return "none"
	}
	return enumword.Of(c.GetCaRotation().GetPhase())
}

// change records field as changed when from and to differ.
func change(ev *api.Event, field, from, to string) {
	if from != to {
		ev.Changes = append(ev.Changes, &api.EventChange{Field: field, From: from, To: to})
	}
}
