package main

import (
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
)

// stateIsolationUnavailable is the state of a node that could not load
// its network isolation ruleset: a member that runs no replicas.
const stateIsolationUnavailable = "isolation_unavailable"

// stateOverlayUnavailable is a ready node that has no overlay link: it
// runs replicas, but none on a network (docs/adr/0026).
const stateOverlayUnavailable = "overlay_unavailable"

// nodeState is a node's state for `jaco node ls`: its status (ready,
// down, unknown), or isolation_unavailable, or for a ready node
// overlay_unavailable, with the reason the node gave.
func nodeState(n *api.Node) (state, message string) {
	d := n.GetDescription()
	if d.GetIsolationUnavailable() {
		return stateIsolationUnavailable, d.GetIsolationMessage()
	}
	st := n.GetStatus().GetState()
	if st == api.NodeStatusState_NODE_STATUS_STATE_READY && d.GetOverlay().GetUnavailable() {
		return stateOverlayUnavailable, d.GetOverlay().GetMessage()
	}
	return enumword.Of(st), n.GetStatus().GetMessage()
}

// stateColumn is the STATE cell: the state, and why when a node runs no
// replicas.
func (v nodeView) stateColumn() string {
	if (v.State == stateIsolationUnavailable || v.State == stateOverlayUnavailable) && v.StateMessage != "" {
		return v.State + " (" + v.StateMessage + ")"
	}
	return v.State
}
