package statusq

import (
	"testing"

	"github.com/jaco-project/jaco/api"
)

// A status replaced after it was sent stays pending; one accepted as
// sent goes.
func TestAcceptedKeepsWhatChangedSince(t *testing.T) {
	running := &api.TaskStatus{State: api.TaskState_TASK_STATE_RUNNING}
	p := Pending{"b": running, "a": {State: api.TaskState_TASK_STATE_STARTING}}
	sent := p.Batch()
	if len(sent) != 2 || sent[0].TaskId != "a" || sent[1].TaskId != "b" {
		t.Fatalf("Batch = %v, want a then b", sent)
	}
	p["a"] = running // a changed while the batch was on its way
	p.Accepted(sent)
	if len(p) != 1 || p["a"] != running {
		t.Fatalf("after Accepted: %v, want a's newer status only", p)
	}
}
