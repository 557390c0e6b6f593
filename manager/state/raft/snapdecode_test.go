package raft

import (
	"fmt"
	"sync/atomic"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// snapshotWithTasks is a store of n tasks over two services, the first
// with tasks of two spec versions, beside a node and a join token; a
// quarter of the tasks have no spec.
func snapshotWithTasks(n int) *api.RaftSnapshot {
	spec := func(name, image string) *api.ServiceSpec {
		// Labels: a map, whose entries an encoding not deterministic
		// orders anew each time.
		return &api.ServiceSpec{Name: name, Image: image, Env: []string{"A=1"}, Placement: &api.Placement{Constraints: []string{"node.role==worker"}},
			Labels: map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}}
	}
	store := &api.StoreSnapshot{
		Nodes:      []*api.Node{{Id: "n1"}},
		Services:   []*api.Service{{Id: "s1", Spec: spec("web", "web:2")}, {Id: "s2", Spec: spec("db", "db:1")}},
		JoinTokens: []*api.JoinToken{{Id: "j1", Hash: []byte{1, 2}}},
	}
	for i := range n {
		t := &api.Task{Id: fmt.Sprintf("t%06d", i), ServiceId: "s1", SpecVersion: 2, Spec: spec("web", "web:2")}
		switch i % 4 {
		case 1:
			t.SpecVersion, t.Spec = 1, spec("web", "web:1")
		case 2:
			t.ServiceId, t.Spec = "s2", spec("db", "db:1")
		case 3:
			t.Spec = nil
		}
		store.Tasks = append(store.Tasks, t)
	}
	return &api.RaftSnapshot{Store: store, Members: []*api.RaftMember{{RaftId: 1, Address: "127.0.0.1:1"}}, RemovedMembers: []*api.RaftMember{{RaftId: 7}}}
}

// TestDecodeSnapshotAsUnmarshal: a snapshot encoded in runs (many, as
// encodeSnapshot writes a large store, or one, as a deterministic
// proto.Marshal writes it) decodes to what proto.Unmarshal gives, the lists in the same
// order; tasks of one service and spec version hold one spec (however
// the specs' maps were ordered: encodeSnapshot's encoding is
// deterministic), tasks of another version or service another.
func TestDecodeSnapshotAsUnmarshal(t *testing.T) {
	want := snapshotWithTasks(10 * objectsPerChunk)
	paced, err := encodeSnapshot(api.FrozenStore{Objects: want.Store}, want.Members, want.RemovedMembers, hurried(), 0)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := proto.MarshalOptions{Deterministic: true}.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"runs": paced, "one field": whole} {
		got, err := decodeSnapshot(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		unmarshalled := &api.RaftSnapshot{}
		if err := proto.Unmarshal(data, unmarshalled); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, unmarshalled) || !proto.Equal(got, want) {
			t.Fatalf("%s: decoded differs from proto.Unmarshal's", name)
		}
		tasks := got.Store.Tasks
		// Every run, whichever core decoded it.
		for i, task := range tasks {
			if i%4 != 3 && task.Spec != tasks[i%4].Spec {
				t.Errorf("%s: task %d holds a spec of its own, not its service and version's", name, i)
				break
			}
		}
		if tasks[0].Spec == tasks[1].Spec || tasks[0].Spec == tasks[2].Spec || tasks[1].Spec == tasks[2].Spec {
			t.Errorf("%s: tasks of another version or service share a spec", name)
		}
		if tasks[len(tasks)-1].Spec != nil {
			t.Errorf("%s: a task without a spec got one", name)
		}
	}
}

// TestDecodeSnapshotKeepsNewerFields: a store field this version does not
// know (a newer member's) is kept, as proto.Unmarshal keeps it.
func TestDecodeSnapshotKeepsNewerFields(t *testing.T) {
	want := snapshotWithTasks(3)
	data, err := encodeSnapshot(api.FrozenStore{Objects: want.Store}, want.Members, want.RemovedMembers, hurried(), 0)
	if err != nil {
		t.Fatal(err)
	}
	unknown := protowire.AppendTag(nil, 99, protowire.BytesType)
	unknown = protowire.AppendBytes(unknown, []byte("a newer table"))
	data = protowire.AppendTag(data, raftSnapshotStore, protowire.BytesType)
	data = protowire.AppendBytes(data, unknown)
	got, err := decodeSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	unmarshalled := &api.RaftSnapshot{}
	if err := proto.Unmarshal(data, unmarshalled); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, unmarshalled) || len(got.Store.ProtoReflect().GetUnknown()) == 0 {
		t.Fatal("the newer field was lost")
	}
}

// TestDecodeSnapshotRefusesWhatUnmarshalRefuses: a snapshot cut short, in
// a run or between fields, does not decode.
func TestDecodeSnapshotRefusesWhatUnmarshalRefuses(t *testing.T) {
	want := snapshotWithTasks(3 * objectsPerChunk)
	data, err := encodeSnapshot(api.FrozenStore{Objects: want.Store}, want.Members, want.RemovedMembers, hurried(), 0)
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, cut := range []int{1, len(data) / 3, len(data) / 2, len(data) - 1} {
		if proto.Unmarshal(data[:cut], &api.RaftSnapshot{}) == nil {
			continue // a cut between fields: both decode it
		}
		refused++
		if _, err := decodeSnapshot(data[:cut]); err == nil {
			t.Errorf("cut at %d of %d: decoded, proto.Unmarshal refuses it", cut, len(data))
		}
	}
	if refused == 0 {
		t.Fatal("every cut fell between fields: nothing was tried")
	}
}

// hurried is a hurry flag already set: encodeSnapshot does not rest.
func hurried() *atomic.Bool {
	var h atomic.Bool
	h.Store(true)
	return &h
}

// BenchmarkDecodeSnapshot: decoding a snapshot of 100 000 tasks, as a
// restarted manager does, against proto.Unmarshal of the same bytes.
func BenchmarkDecodeSnapshot(b *testing.B) {
	want := snapshotWithTasks(100_000)
	data, err := encodeSnapshot(api.FrozenStore{Objects: want.Store}, want.Members, want.RemovedMembers, hurried(), 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decodeSnapshot", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeSnapshot(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("proto.Unmarshal", func(b *testing.B) {
		for b.Loop() {
			if err := proto.Unmarshal(data, &api.RaftSnapshot{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
