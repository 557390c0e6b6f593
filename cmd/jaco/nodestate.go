package main

import "github.com/jaco-project/jaco/api"

// stateIsolationUnavailable is the state of a node that could not load
// its network isolation ruleset: a member that runs no replicas.
const stateIsolationUnavailable = "isolation_unavailable"

// nodeState is a node's state for `jaco node ls`: its status (ready,
// down, unknown), or isolation_unavailable with the reason the node gave.
func nodeState(n *api.Node) (state, message string) {
	if d := n.GetDescription(); d.GetIsolationUnavailable() {
		return stateIsolationUnavailable, d.GetIsolationMessage()
	}
	return word(n.GetStatus().GetState().String(), "NODE_STATUS_STATE_"), n.GetStatus().GetMessage()
}

// stateColumn is the STATE cell: the state, and why when a node runs no
// replicas.
func (v nodeView) stateColumn() string {
	if v.State == stateIsolationUnavailable && v.StateMessage != "" {
		return v.State + " (" + v.StateMessage + ")"
	}
	return v.State
}
