package orchestrator

import (
	"fmt"
	"testing"

	"github.com/jaco-project/jaco/api"
)

func TestPlanKeepsOneNetOpPerTask(t *testing.T) {
	pl := plan{byID: map[string]*op{}}
	a, b, c := &api.Task{Id: "a"}, &api.Task{Id: "b"}, &api.Task{Id: "c"}
	pl.record(opCreate, a, false)
	pl.record(opDelete, a, false) // created and deleted: nothing to write
	pl.record(opUpdate, b, false)
	pl.record(opDelete, b, false)
	pl.record(opCreate, c, false)
	pl.record(opUpdate, c, false)
	var got []string
	for _, bt := range pl.batches(10) {
		for _, o := range bt {
			got = append(got, fmt.Sprintf("%d:%s", o.kind, o.obj.GetId()))
		}
	}
	want := fmt.Sprint([]string{fmt.Sprintf("%d:b", opDelete), fmt.Sprintf("%d:c", opCreate)})
	if fmt.Sprint(got) != want {
		t.Fatalf("net ops %v, want %v", got, want)
	}
}

func TestPlanBatchesNeverSplitGluedOps(t *testing.T) {
	pl := plan{byID: map[string]*op{}}
	for i := range 5 {
		// Each stop is followed by its glued replacement.
		pl.record(opUpdate, &api.Task{Id: fmt.Sprint("old", i)}, false)
		pl.record(opCreate, &api.Task{Id: fmt.Sprint("new", i)}, true)
	}
	n := 0
	for _, bt := range pl.batches(3) {
		n += len(bt)
		if bt[0].glued {
			t.Fatalf("batch starts with a glued op: %v", bt[0].obj.GetId())
		}
		if len(bt) > 4 {
			t.Fatalf("batch of %d ops for size 3", len(bt))
		}
	}
	if n != 10 {
		t.Fatalf("batches hold %d ops, want 10", n)
	}
}
