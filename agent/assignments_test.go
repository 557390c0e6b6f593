package agent

import (
	"slices"
	"testing"

	"github.com/jaco-project/jaco/api"
)

func TestCompletePartsApplyAsOneSet(t *testing.T) {
	const (
		complete    = api.AssignmentsMessage_TYPE_COMPLETE
		incremental = api.AssignmentsMessage_TYPE_INCREMENTAL
	)
	msg := func(typ api.AssignmentsMessage_Type, more bool, ids ...string) *api.AssignmentsMessage {
		m := &api.AssignmentsMessage{Type: typ, More: more}
		for _, id := range ids {
			m.Updated = append(m.Updated, &api.Task{Id: id})
		}
		return m
	}
	var c CompleteParts
	// A whole set in one message, and changes, pass as they are.
	for _, m := range []*api.AssignmentsMessage{msg(complete, false, "t1"), msg(incremental, false, "t2")} {
		if got := c.Add(m); got != m {
			t.Fatalf("add(%v) = %v, want it as it is", m, got)
		}
	}
	// A set in three parts is applied once, whole, at its last part.
	for _, m := range []*api.AssignmentsMessage{msg(complete, true, "a"), msg(complete, true, "b")} {
		if got := c.Add(m); got != nil {
			t.Fatalf("part %v applied alone: %v", m, got)
		}
	}
	got := c.Add(msg(complete, false, "c"))
	if got.GetType() != complete || got.GetMore() || !slices.Equal(ids(got.GetUpdated()), []string{"a", "b", "c"}) {
		t.Fatalf("whole set %v, want COMPLETE a b c", got)
	}
	// The next set starts afresh.
	if got := c.Add(msg(complete, false, "d")); !slices.Equal(ids(got.GetUpdated()), []string{"d"}) {
		t.Fatalf("next set %v, want d alone", got)
	}
}

func ids(tasks []*api.Task) []string {
	var out []string
	for _, t := range tasks {
		out = append(out, t.GetId())
	}
	return out
}
