package controlapi

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/limits"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/apierror"
	"github.com/jaco-project/jaco/manager/placement"
	"github.com/jaco-project/jaco/manager/state/store"
)

// labelKey is what a constraint can name after node.labels.
var labelKey = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

// checkLabels refuses label keys a constraint could not name, and values
// too long or holding control characters (they are printed by node ls).
// Nodes and networks share the rules.
func checkLabels(labels map[string]string) error {
	if len(labels) > limits.MaxNodeLabels {
		return reason.Error(codes.ResourceExhausted, reason.LimitExceeded,
			"%d labels in one request: the limit is %d", len(labels), limits.MaxNodeLabels)
	}
	for k, v := range labels {
		if !labelKey.MatchString(k) {
			return invalid("label key %q: use letters, digits, '.', '_' or '-' (at most 63)", k)
		}
		if len(v) > limits.MaxLabelValueBytes {
			return reason.Error(codes.ResourceExhausted, reason.LimitExceeded,
				"label %s: value of %d bytes, the limit is %d", k, len(v), limits.MaxLabelValueBytes)
		}
		if !utf8.ValidString(v) || strings.ContainsFunc(v, unicode.IsControl) {
			return invalid("label %s: the value holds control characters or is not UTF-8", k)
		}
	}
	return nil
}

// UpdateNode changes what the operator decides about a node: its
// availability and its labels. Availability drain starts the leader's
// drain machine (see startDrain); active or pause cancels a drain.
func (s *Server) UpdateNode(ctx context.Context, req *api.UpdateNodeRequest) (*api.UpdateNodeResponse, error) {
	if err := checkLabels(req.SetLabels); err != nil {
		return nil, err
	}
	if a := req.Availability; a != nil && api.NodeAvailability_name[int32(*a)] == "" {
		return nil, invalid("unknown availability %d", *a)
	}
	if err := checkDrainTimeout(req.DrainTimeout); err != nil {
		return nil, err
	}
	var id string
	err := s.update(ctx, func(tx *store.Tx) error {
		n := FindNode(tx, req.Node)
		if n == nil {
			return notFound("node", req.Node)
		}
		id = n.Id
		if err := setDesiredRole(tx, n, req.Role); err != nil {
			return err
		}
		switch {
		case req.Availability == nil:
		case *req.Availability == api.NodeAvailability_NODE_AVAILABILITY_DRAIN:
			if err := startDrain(tx, n, req.DrainTimeout, req.Force, false); err != nil {
				return err
			}
		default:
			n.Availability = *req.Availability
			n.Drain = nil // cancelled
		}
		if n.Labels == nil && len(req.SetLabels) > 0 {
			n.Labels = map[string]string{}
		}
		for k, v := range req.SetLabels {
			n.Labels[k] = v
		}
		for _, k := range req.RemoveLabels {
			delete(n.Labels, k)
		}
		if len(n.Labels) > limits.MaxNodeLabels {
			return reason.Error(codes.ResourceExhausted, reason.LimitExceeded,
				"node %s would have %d labels: the limit is %d", n.Hostname, len(n.Labels), limits.MaxNodeLabels)
		}
		return tx.Update(n)
	})
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	var n *api.Node
	s.store.View(func(tx store.ReadTx) { n = tx.GetNode(id) })
	return &api.UpdateNodeResponse{Node: n}, nil
}

// checkDrainTimeout refuses a negative replacement timeout.
func checkDrainTimeout(d *durationpb.Duration) error {
	if d != nil && (d.CheckValid() != nil || d.AsDuration() < 0) {
		return invalid("drain timeout %v: want a positive duration", d.AsDuration())
	}
	return nil
}

// startDrain sets n (read in tx, written by the caller's tx.Update)
// draining for the leader's drain machine, unless it hosts live replicas
// of services pinned to it and force is not set: then nothing changes and
// the error names them (node_hosts_pinned_replicas). Draining a node
// already draining keeps its progress and a removal asked for earlier.
func startDrain(tx store.ReadTx, n *api.Node, timeout *durationpb.Duration, force, remove bool) error {
	if !force {
		if ids := pinnedReplicas(tx, n); len(ids) > 0 {
			return reason.Error(codes.FailedPrecondition, reason.NodeHostsPinnedReplicas,
				"node hosts pinned replicas: [%s]", strings.Join(ids, " "))
		}
	}
	if timeout == nil || timeout.AsDuration() == 0 {
		timeout = durationpb.New(api.DefaultDrainTimeout)
	}
	d := &api.NodeDrain{
		State:              api.DrainState_DRAIN_STATE_DRAINING,
		ReplacementTimeout: timeout,
		StartedAt:          timestamppb.Now(),
		Remove:             remove,
		Force:              force,
	}
	if old := n.GetDrain(); old.GetState() == api.DrainState_DRAIN_STATE_DRAINING &&
		n.Availability == api.NodeAvailability_NODE_AVAILABILITY_DRAIN {
		d.StartedAt, d.Total, d.Moved = old.StartedAt, old.Total, old.Moved
		d.Remove = remove || old.Remove
	}
	n.Availability = api.NodeAvailability_NODE_AVAILABILITY_DRAIN
	n.Drain = d
	return nil
}

// pinnedReplicas are the ids of live replicas on n whose service is pinned
// to n: they have nowhere else to go.
func pinnedReplicas(tx store.ReadTx, n *api.Node) []string {
	var ids []string
	for _, t := range tx.ListTasksByNode(n.GetId()) {
		if t.GetDesiredState() != api.TaskState_TASK_STATE_RUNNING || t.GetStatus().GetState() >= api.TaskState_TASK_STATE_COMPLETE {
			continue
		}
		svc := tx.GetService(t.GetServiceId())
		if placement.PinnedTo(svc.GetSpec().GetPlacement(), n) {
			ids = append(ids, t.GetId())
		}
	}
	slices.Sort(ids)
	return ids
}

// hostsReplicas: some task on n has not ended yet.
func hostsReplicas(tx store.ReadTx, n *api.Node) bool {
	for _, t := range tx.ListTasksByNode(n.GetId()) {
		if t.GetStatus().GetState() < api.TaskState_TASK_STATE_COMPLETE {
			return true
		}
	}
	return false
}
