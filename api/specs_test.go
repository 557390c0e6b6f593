package api

import (
	"fmt"
	"testing"
)

// TestSpecsShare: tasks of one service and spec version with equal specs
// end up holding one copy; another version, another service or a
// different spec keep their own; a service's oldest version is dropped
// past specsKept, and Forget drops them all.
func TestSpecsShare(t *testing.T) {
	task := func(svc string, version uint64, image string) *Task {
		return &Task{ServiceId: svc, SpecVersion: version, Spec: &ServiceSpec{Name: svc, Image: image}}
	}
	c := NewSpecs()
	a, b := task("s1", 1, "web:1"), task("s1", 1, "web:1")
	c.Share(a)
	c.Share(b)
	if a.Spec != b.Spec {
		t.Fatal("equal specs of one version are not shared")
	}
	for _, other := range []*Task{task("s1", 2, "web:1"), task("s2", 1, "web:1"), task("s1", 1, "web:2")} {
		c.Share(other)
		if other.Spec == a.Spec {
			t.Errorf("task %v shares the spec of s1 version 1", other)
		}
	}
	if b.Spec.Image != "web:1" {
		t.Errorf("sharing changed a spec: %v", b.Spec)
	}
	for v := range uint64(specsKept) {
		c.Share(task("s1", 10+v, fmt.Sprint("web:", 10+v)))
	}
	late := task("s1", 1, "web:1")
	c.Share(late)
	if late.Spec == a.Spec {
		t.Errorf("s1 version 1 still kept after %d newer versions", specsKept)
	}
	c.Forget("s1")
	again := task("s1", 13, "web:13")
	kept := again.Spec
	c.Share(again)
	if again.Spec != kept {
		t.Error("a forgotten service's spec was shared")
	}
}

// TestSpecsShareEqualAllocatesNothing: a task whose spec equals one kept
// (every task of a service but the first, in a restart's replay) is
// shared without an allocation of its own.
func TestSpecsShareEqualAllocatesNothing(t *testing.T) {
	spec := func() *ServiceSpec {
		return &ServiceSpec{Name: "web", Image: "web:1", Env: []string{"A=1", "B=2"}, Placement: &Placement{Constraints: []string{"node.role==worker"}}}
	}
	c := NewSpecs()
	c.Share(&Task{ServiceId: "s1", SpecVersion: 1, Spec: spec()})
	tasks := make([]*Task, 101)
	for i := range tasks {
		tasks[i] = &Task{ServiceId: "s1", SpecVersion: 1, Spec: spec()}
	}
	i := 0
	allocs := testing.AllocsPerRun(100, func() {
		c.Share(tasks[i])
		i++
	})
	if allocs != 0 {
		t.Errorf("sharing an equal spec allocated %.1f times", allocs)
	}
	if tasks[0].Spec != tasks[100].Spec {
		t.Error("equal specs were not shared")
	}
}

// TestSpecsShareRemembersEqualCopies: a copy found equal to a kept spec
// is shared at once for the next task holding it, without an encoding,
// and only for that spec version; a copy that is not equal is not
// remembered.
func TestSpecsShareRemembersEqualCopies(t *testing.T) {
	c := NewSpecs()
	kept := &Task{ServiceId: "s1", SpecVersion: 1, Spec: &ServiceSpec{Name: "web", Image: "web:1"}}
	c.Share(kept)
	copyOf := &ServiceSpec{Name: "web", Image: "web:1"} // one decoded copy, held by many tasks
	first := &Task{ServiceId: "s1", SpecVersion: 1, Spec: copyOf}
	c.Share(first)
	if first.Spec != kept.Spec {
		t.Fatal("an equal copy was not shared")
	}
	before := c.encodings
	for range 100 {
		task := &Task{ServiceId: "s1", SpecVersion: 1, Spec: copyOf}
		c.Share(task)
		if task.Spec != kept.Spec {
			t.Fatal("a copy found equal before was not shared")
		}
	}
	if n := c.encodings - before; n != 0 {
		t.Errorf("sharing a copy found equal before encoded it %d times in 100", n)
	}
	next := &Task{ServiceId: "s1", SpecVersion: 2, Spec: copyOf}
	c.Share(next)
	if next.Spec == kept.Spec {
		t.Error("a copy of version 1 was shared as version 2's")
	}
}
