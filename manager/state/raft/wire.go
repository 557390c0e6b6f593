package raft

import (
	"iter"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/jaco-project/jaco/api"
)

// What the snapshot's encoder and the decoders of snapshots and entries
// read and write of encoded messages without decoding them: a few fields,
// by number.

// wireField is one field of an encoded message: its number, wire type and
// encoding (raw, tag included); value is the contents of a field of the
// bytes wire type, varint the value of one of the varint type.
type wireField struct {
	num    protowire.Number
	typ    protowire.Type
	raw    []byte
	value  []byte
	varint uint64
}

// wireFields yields msg's fields in order. Where msg does not parse it
// yields the rest as one last field numbered 0 (no field's number), so
// that a copy made of the fields' raw bytes fails to decode as msg does.
func wireFields(msg []byte) iter.Seq[wireField] {
	return func(yield func(wireField) bool) {
		for b := msg; len(b) > 0; {
			num, typ, n := protowire.ConsumeTag(b)
			m := 0
			if n >= 0 {
				m = protowire.ConsumeFieldValue(num, typ, b[n:])
			}
			if n < 0 || m < 0 {
				yield(wireField{raw: b})
				return
			}
			f := wireField{num: num, typ: typ, raw: b[:n+m]}
			switch typ {
			case protowire.BytesType:
				f.value, _ = protowire.ConsumeBytes(b[n:])
			case protowire.VarintType:
				f.varint, _ = protowire.ConsumeVarint(b[n:])
			}
			if !yield(f) {
				return
			}
			b = b[n+m:]
		}
	}
}

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
