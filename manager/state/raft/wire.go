package raft

import (
	"iter"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/jaco-project/jaco/api"
)

// What the snapshot's encoder and the restart's decoders read and write of
// encoded messages without decoding them: a few fields, by number.

// bytesFields yields the value of each field num of the bytes wire type in
// msg, in order; it stops where msg does not parse.
func bytesFields(msg []byte, num protowire.Number) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for b := msg; len(b) > 0; {
			n0, typ, n := protowire.ConsumeTag(b)
			if n < 0 {
				return
			}
			m := protowire.ConsumeFieldValue(n0, typ, b[n:])
			if m < 0 {
				return
			}
			if n0 == num && typ == protowire.BytesType {
				value, _ := protowire.ConsumeBytes(b[n:])
				if !yield(value) {
					return
				}
			}
			b = b[n+m:]
		}
	}
}

// onlyBytesField is the value of msg's field num, of the bytes wire type,
// when msg holds it once; nil if not (a repeated one decodes merged).
func onlyBytesField(msg []byte, num protowire.Number) []byte {
	var value []byte
	seen := 0
	for v := range bytesFields(msg, num) {
		value, seen = v, seen+1
	}
	if seen != 1 {
		return nil
	}
	return value
}

// taskSpecBytes is the encoding of task's spec field, nil when it has
// none or more than one.
func taskSpecBytes(task []byte) []byte { return onlyBytesField(task, taskSpec) }

// actionTaskSpec is the spec's bytes of the task a StoreAction's encoding
// holds; nil for another target, or none.
func actionTaskSpec(action []byte) []byte { return taskSpecBytes(onlyBytesField(action, actionTask)) }

// The field numbers read: RaftSnapshot.store, StoreSnapshot.tasks,
// Task.spec, InternalRaftRequest.actions and StoreAction.task.
var (
	raftSnapshotStore  = fieldNumber(&api.RaftSnapshot{}, "store")
	storeSnapshotTasks = fieldNumber(&api.StoreSnapshot{}, "tasks")
	taskSpec           = fieldNumber(&api.Task{}, "spec")
	requestActions     = fieldNumber(&api.InternalRaftRequest{}, "actions")
	actionTask         = fieldNumber(&api.StoreAction{}, "task")
)

func fieldNumber(m protoreflect.ProtoMessage, name protoreflect.Name) protowire.Number {
	return m.ProtoReflect().Descriptor().Fields().ByName(name).Number()
}
