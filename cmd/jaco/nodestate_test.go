package main

import (
	"testing"

	"github.com/jaco-project/jaco/api"
)

func TestNodeStateShowsIsolationUnavailable(t *testing.T) {
	ready := &api.Node{Status: &api.NodeStatus{State: api.NodeStatusState_NODE_STATUS_STATE_READY}}
	if v := toNodeView(ready); v.stateColumn() != "ready" {
		t.Errorf("ready node: STATE %q, want ready", v.stateColumn())
	}
	unisolated := &api.Node{
		Status: &api.NodeStatus{State: api.NodeStatusState_NODE_STATUS_STATE_READY},
		Description: &api.NodeDescription{IsolationUnavailable: true,
			IsolationMessage: "network isolation unavailable: operation not permitted"},
	}
	v := toNodeView(unisolated)
	if v.State != "isolation_unavailable" || v.StateMessage != "network isolation unavailable: operation not permitted" {
		t.Errorf("unisolated node: state %q message %q", v.State, v.StateMessage)
	}
	if want := "isolation_unavailable (network isolation unavailable: operation not permitted)"; v.stateColumn() != want {
		t.Errorf("STATE %q, want %q", v.stateColumn(), want)
	}
}

func TestNodeStateShowsOverlayUnavailable(t *testing.T) {
	node := func(state api.NodeStatusState) *api.Node {
		return &api.Node{Status: &api.NodeStatus{State: state},
			Description: &api.NodeDescription{Overlay: &api.OverlayEndpoint{Unavailable: true, Message: "no TUN device"}}}
	}
	if got := toNodeView(node(api.NodeStatusState_NODE_STATUS_STATE_READY)).stateColumn(); got != "overlay_unavailable (no TUN device)" {
		t.Errorf("ready node without an overlay: STATE %q", got)
	}
	if got := toNodeView(node(api.NodeStatusState_NODE_STATUS_STATE_DOWN)).stateColumn(); got != "down" {
		t.Errorf("down node without an overlay: STATE %q, want down", got)
	}
}
