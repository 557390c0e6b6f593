package raft

import (
	"encoding/binary"
	"fmt"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// specShare decodes log entries' requests and snapshot runs whose tasks
// repeat a spec, as the tasks of one service do: of the tasks with the
// same service, spec version and spec bytes, the first has its spec
// decoded and the others point at it, their spec fields cut from a copy
// of the message before it is decoded. The specs were more than half of
// decoding a placement's requests, the most of a restart's replay
// (docs/design.md §7). The store shares them anyway (api.Specs), and
// nothing changes a decoded task's spec in place.
//
// What does not have the usual shape (a task whose spec field is not there
// exactly once, a StoreAction holding more than one target) is decoded as
// it is, its spec its own. Not safe for concurrent use.
type specShare struct {
	// first is the decoded spec of each service, version and spec bytes
	// seen.
	first map[string]firstSpec
	key   []byte
	// The message being decoded: its copy with the cut specs left out,
	// a task's and an action's scratch, and what each of its tasks gets.
	msg, task, action []byte
	slots             []specSlot
	pending           []string // the keys of first this message decodes
}

// firstSpec is a spec decoded, or (spec nil) to be decoded by the task
// of the message being decoded whose slot is at.
type firstSpec struct {
	spec *api.ServiceSpec
	at   int
}

// specSlot is what one task of a message gets: a spec decoded before
// (spec), the spec of the message's task at index from, or (from < 0,
// spec nil) its own, which is first's for key when key is not empty.
// encoded is the task's spec field, nil when it has none or more than one.
type specSlot struct {
	spec    *api.ServiceSpec
	from    int
	key     string
	encoded []byte
}

// The other fields read: Task.service_id and spec_version, and
// StoreAction.kind (its other fields are the oneof's targets).
var (
	taskServiceID   = fieldNumber(&api.Task{}, "service_id")
	taskSpecVersion = fieldNumber(&api.Task{}, "spec_version")
	actionKind      = fieldNumber(&api.StoreAction{}, "kind")
)

// specsFirstKept bounds first: a decoder that lives on (a member's Ready
// loop) starts again once it holds so many specs.
const specsFirstKept = 256

// specShareMinBytes is the size below which a request is decoded as it
// is: a task with a spec worth sharing takes more (the ids alone are 80
// bytes), and looking for one cost a join token's write, most of what a
// follower applies at thousands of writes a second, a quarter of its
// decoding (BenchmarkDecodeRequest).
const specShareMinBytes = 256

// decodeRequest decodes e's request.
func (s *specShare) decodeRequest(e raftpb.Entry) (*api.InternalRaftRequest, error) {
	if len(e.Data) >= specShareMinBytes {
		req := &api.InternalRaftRequest{}
		err := proto.Unmarshal(s.cutRequest(e.Data), req)
		if err == nil && s.fill(len(req.Actions), func(i int) *api.Task { return req.Actions[i].GetTask() }) {
			return req, nil
		}
		if err != nil {
			s.abandon()
		}
	}
	// Small, or not of the shape cut, or not decoding (the error is then
	// the entry's own): decoded as it is.
	req := &api.InternalRaftRequest{}
	if err := proto.Unmarshal(e.Data, req); err != nil {
		return nil, fmt.Errorf("decode entry %d: %w", e.Index, err)
	}
	return req, nil
}

// decodeRun decodes a snapshot's store run, with each task's spec field
// (specs[i] is Tasks[i]'s, nil for a task with none or more than one;
// specs is nil when the run did not decode as cut).
func (s *specShare) decodeRun(run []byte) (store *api.StoreSnapshot, specs [][]byte, err error) {
	store = &api.StoreSnapshot{}
	err = proto.Unmarshal(s.cutRun(run), store)
	if err == nil && s.fill(len(store.Tasks), func(i int) *api.Task { return store.Tasks[i] }) {
		specs = make([][]byte, len(s.slots))
		for i, slot := range s.slots {
			specs[i] = slot.encoded
		}
		return store, specs, nil
	}
	if err != nil {
		s.abandon()
	}
	store = &api.StoreSnapshot{}
	if err := proto.Unmarshal(run, store); err != nil {
		return nil, nil, err
	}
	return store, nil, nil
}

// cutRequest is req with the specs of its actions' tasks cut where they
// repeat one seen; a slot for each action.
func (s *specShare) cutRequest(req []byte) []byte {
	s.begin()
	for f := range wireFields(req) {
		if f.num != requestActions || f.typ != protowire.BytesType {
			s.msg = append(s.msg, f.raw...)
			continue
		}
		task, tasks := []byte(nil), 0
		for g := range wireFields(f.value) {
			if g.num == actionTask && g.typ == protowire.BytesType {
				task, tasks = g.value, tasks+1
			} else if g.num != actionKind {
				tasks = 2 // another target (the oneof keeps the last), or a field unknown here
			}
		}
		if tasks != 1 {
			s.slots = append(s.slots, specSlot{from: -1})
			s.msg = append(s.msg, f.raw...)
			continue
		}
		s.task = s.cutTask(s.task[:0], task)
		if len(s.task) == len(task) {
			s.msg = append(s.msg, f.raw...)
			continue
		}
		s.action = s.action[:0]
		for g := range wireFields(f.value) {
			if g.num == actionTask && g.typ == protowire.BytesType {
				s.action = protowire.AppendTag(s.action, actionTask, protowire.BytesType)
				s.action = protowire.AppendBytes(s.action, s.task)
			} else {
				s.action = append(s.action, g.raw...)
			}
		}
		s.msg = protowire.AppendTag(s.msg, requestActions, protowire.BytesType)
		s.msg = protowire.AppendBytes(s.msg, s.action)
	}
	return s.msg
}

// cutRun is a store run with the specs of its tasks cut where they repeat
// one seen; a slot for each task.
func (s *specShare) cutRun(run []byte) []byte {
	s.begin()
	for f := range wireFields(run) {
		if f.num != storeSnapshotTasks || f.typ != protowire.BytesType {
			s.msg = append(s.msg, f.raw...)
			continue
		}
		s.task = s.cutTask(s.task[:0], f.value)
		s.msg = protowire.AppendTag(s.msg, storeSnapshotTasks, protowire.BytesType)
		s.msg = protowire.AppendBytes(s.msg, s.task)
	}
	return s.msg
}

// cutTask appends task to dst, its spec field left out when the spec
// repeats one seen, and adds the task's slot.
func (s *specShare) cutTask(dst, task []byte) []byte {
	var service, spec []byte
	var version uint64
	specs := 0
	for f := range wireFields(task) {
		switch {
		case f.num == taskServiceID && f.typ == protowire.BytesType:
			service = f.value
		case f.num == taskSpecVersion && f.typ == protowire.VarintType:
			version = f.varint
		case f.num == taskSpec:
			spec, specs = f.value, specs+1
		}
	}
	if specs != 1 || spec == nil {
		s.slots = append(s.slots, specSlot{from: -1})
		return append(dst, task...)
	}
	s.key = appendSpecKey(s.key[:0], service, version, spec)
	first, seen := s.first[string(s.key)]
	if !seen {
		key := string(s.key)
		s.first[key] = firstSpec{at: len(s.slots)}
		s.pending = append(s.pending, key)
		s.slots = append(s.slots, specSlot{from: -1, key: key, encoded: spec})
		return append(dst, task...)
	}
	slot := specSlot{spec: first.spec, from: -1, encoded: spec}
	if first.spec == nil {
		slot.from = first.at
	}
	s.slots = append(s.slots, slot)
	for f := range wireFields(task) {
		if f.num != taskSpec {
			dst = append(dst, f.raw...)
		}
	}
	return dst
}

// appendSpecKey appends to key what tells a task's spec from others: its
// service, spec version and spec bytes.
func appendSpecKey[S string | []byte](key []byte, service S, version uint64, spec []byte) []byte {
	key = binary.AppendUvarint(key, uint64(len(service)))
	key = binary.AppendUvarint(append(key, service...), version)
	return append(key, spec...)
}

func (s *specShare) begin() {
	s.msg, s.slots, s.pending = s.msg[:0], s.slots[:0], s.pending[:0]
	if s.first == nil || len(s.first) >= specsFirstKept {
		s.first = map[string]firstSpec{}
	}
}

// fill gives the decoded message's tasks (n slots, task(i) the i-th,
// nil for an action of another target) their shared specs. False when the
// message did not decode as cut: the pending keys are dropped.
func (s *specShare) fill(n int, task func(int) *api.Task) bool {
	if n != len(s.slots) {
		s.abandon()
		return false
	}
	for i, slot := range s.slots {
		t := task(i)
		cut := slot.spec != nil || slot.from >= 0
		if cut && (t == nil || t.Spec != nil) || slot.key != "" && t.GetSpec() == nil {
			s.abandon()
			return false
		}
	}
	for i, slot := range s.slots {
		switch {
		case slot.spec != nil:
			task(i).Spec = slot.spec
		case slot.from >= 0:
			task(i).Spec = task(slot.from).Spec
		case slot.key != "":
			s.first[slot.key] = firstSpec{spec: task(i).Spec}
		}
	}
	return true
}

// abandon forgets the keys the message being decoded would have decoded.
func (s *specShare) abandon() {
	for _, key := range s.pending {
		delete(s.first, key)
	}
	s.pending = s.pending[:0]
}
