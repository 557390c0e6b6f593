package api

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestShallowCopiesEveryField sets every field of a Task, one at a time,
// and checks Shallow keeps it: a field added to Task and not to Shallow
// would otherwise be dropped from every task the orchestrator rewrites.
func TestShallowCopiesEveryField(t *testing.T) {
	fields := (&Task{}).ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		task := &Task{}
		m := task.ProtoReflect()
		m.Set(fd, someValue(m, fd))
		if got := task.Shallow(); !proto.Equal(got, task) {
			t.Errorf("Shallow drops field %s: got %v, want %v", fd.Name(), got, task)
		}
	}
}

// TestShallowSharesMessages: the copy's messages are the original's, and
// setting a field of the copy leaves the original as it was.
func TestShallowSharesMessages(t *testing.T) {
	orig := &Task{Id: "t", Spec: &ServiceSpec{Name: "web"}, Status: &TaskStatus{State: TaskState_TASK_STATE_RUNNING}}
	c := orig.Shallow()
	if c.Spec != orig.Spec || c.Status != orig.Status {
		t.Fatal("Shallow copied a message it should share")
	}
	c.DesiredState = TaskState_TASK_STATE_SHUTDOWN
	c.Status = &TaskStatus{State: TaskState_TASK_STATE_ORPHANED}
	if orig.DesiredState != TaskState_TASK_STATE_UNSPECIFIED || orig.Status.State != TaskState_TASK_STATE_RUNNING {
		t.Fatalf("changing the copy changed the original: %v", orig)
	}
}

// someValue is a non-zero value for fd in m.
func someValue(m protoreflect.Message, fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch {
	case fd.IsList() && fd.Message() != nil:
		// One empty element: a list of one is set, and kept or dropped.
		l := m.NewField(fd).List()
		l.Append(protoreflect.ValueOfMessage(l.NewElement().Message()))
		return protoreflect.ValueOfList(l)
	case fd.IsList() || fd.IsMap():
		panic("Task has no map field nor list of scalars; extend someValue")
	case fd.Message() != nil:
		// An empty message is set, and so kept or dropped, all the same.
		return protoreflect.ValueOfMessage(m.NewField(fd).Message())
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("x")
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.Uint64Kind:
		return protoreflect.ValueOfUint64(7)
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(1)
	}
	panic("someValue: no value for kind " + fd.Kind().String())
}
