package enumword_test

import (
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
)

func TestOf(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{enumword.Of(api.TaskState_TASK_STATE_RUNNING), "running"},
		{enumword.Of(api.NodeStatusState_NODE_STATUS_STATE_READY), "ready"},
		{enumword.Of(api.NodeState_NODE_STATE_UNINITIALIZED), "uninitialized"},
		{enumword.Of(api.NodeRole_NODE_ROLE_MANAGER), "manager"},
		{enumword.Of(api.UpdateState_UPDATE_STATE_ROLLBACK_PAUSED), "rollback_paused"},
		{enumword.Of(api.RestartCondition_RESTART_CONDITION_ON_FAILURE), "on_failure"},
		{enumword.Of(api.DrainState_DRAIN_STATE_DRAINING), "draining"},
		// A number from a newer peer stays a number.
		{enumword.Of(api.TaskState(999)), "999"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if _, ok := enumword.Name(api.TaskState(0).Descriptor(), 999); ok {
		t.Error("Name knows a number the enum does not")
	}
}
