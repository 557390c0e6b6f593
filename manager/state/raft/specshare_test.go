package raft

import (
	"fmt"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// placementRequest is a write of n task updates of service s1 at spec
// version 1, as the scheduler proposes a placement, with a node update
// after them.
func placementRequest(tb testing.TB, id uint64, n int) []byte {
	tb.Helper()
	req := &api.InternalRaftRequest{Id: id}
	for i := range n {
		task := &api.Task{Id: fmt.Sprint(id, "-", i), ServiceId: "s1", NodeId: "n1", SpecVersion: 1,
			Spec: &api.ServiceSpec{Name: "web", Image: "web:1", Placement: &api.Placement{Constraints: []string{"node.role==worker"}},
				Labels: map[string]string{"a": "1", "b": "2"}}}
		req.Actions = append(req.Actions, &api.StoreAction{Kind: api.StoreAction_KIND_UPDATE, Target: &api.StoreAction_Task{Task: task}})
	}
	req.Actions = append(req.Actions, &api.StoreAction{Kind: api.StoreAction_KIND_UPDATE, Target: &api.StoreAction_Node{Node: &api.Node{Id: "n1"}}})
	data, err := proposalEncoding.Marshal(req)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// decodesAsUnmarshal fails t unless s decodes data as proto.Unmarshal
// does: the same request, or an error where it errs.
func decodesAsUnmarshal(t *testing.T, s *specShare, data []byte) *api.InternalRaftRequest {
	t.Helper()
	want := &api.InternalRaftRequest{}
	wantErr := proto.Unmarshal(data, want)
	got, err := s.decodeRequest(raftpb.Entry{Index: 1, Data: data})
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("decoded with error %v; proto.Unmarshal's %v", err, wantErr)
	}
	if err == nil && !proto.Equal(got, want) {
		t.Fatalf("decoded %v\nproto.Unmarshal %v", got, want)
	}
	return got
}

// TestSpecShareDecodesAsUnmarshal: requests decode as proto.Unmarshal
// decodes them, those of the usual shape and those that are not (a task
// whose spec comes twice, an action whose target comes twice or changes,
// fields unknown here, a torn encoding); the tasks of one service, spec
// version and spec bytes hold one spec, across the requests one decoder
// decodes, and tasks of another version, service or spec their own.
func TestSpecShareDecodesAsUnmarshal(t *testing.T) {
	var s specShare
	first := decodesAsUnmarshal(t, &s, placementRequest(t, 1, 5))
	second := decodesAsUnmarshal(t, &s, placementRequest(t, 2, 5))
	spec := first.Actions[0].GetTask().Spec
	for _, req := range []*api.InternalRaftRequest{first, second} {
		for _, a := range req.Actions[:5] {
			if a.GetTask().Spec != spec {
				t.Fatalf("task %s holds a spec of its own", a.GetTask().Id)
			}
		}
	}

	other := &api.InternalRaftRequest{Id: 3, Actions: []*api.StoreAction{
		{Target: &api.StoreAction_Task{Task: &api.Task{Id: "v2", ServiceId: "s1", SpecVersion: 2, Spec: spec}}},
		{Target: &api.StoreAction_Task{Task: &api.Task{Id: "none", ServiceId: "s1", SpecVersion: 1}}},
		{Target: &api.StoreAction_Task{Task: &api.Task{Id: "s2", ServiceId: "s2", SpecVersion: 1, Spec: spec}}},
		// The same service and version, other bytes: no log holds such
		// tasks, and nothing but the bytes may decide.
		{Target: &api.StoreAction_Task{Task: &api.Task{Id: "other", ServiceId: "s1", SpecVersion: 1, Spec: &api.ServiceSpec{Name: "web", Image: "web:other"}}}},
	}}
	data, err := proposalEncoding.Marshal(other)
	if err != nil {
		t.Fatal(err)
	}
	got := decodesAsUnmarshal(t, &s, data)
	if got.Actions[0].GetTask().Spec == spec || got.Actions[2].GetTask().Spec == spec || got.Actions[3].GetTask().Spec == spec {
		t.Fatal("another version's, service's or spec's task shares the spec")
	}

	placement := placementRequest(t, 4, 3)
	action := firstField(placement, requestActions)
	task := firstField(action, actionTask)
	specField := protowire.AppendBytes(protowire.AppendTag(nil, taskSpec, protowire.BytesType), firstField(task, taskSpec))
	taskOf := func(fields ...[]byte) []byte {
		var b []byte
		for _, f := range fields {
			b = append(b, f...)
		}
		return protowire.AppendBytes(protowire.AppendTag(nil, actionTask, protowire.BytesType), b)
	}
	request := func(actions ...[]byte) []byte {
		b := placement // the usual first: its spec is known after it
		for _, a := range actions {
			b = protowire.AppendBytes(protowire.AppendTag(b, requestActions, protowire.BytesType), a)
		}
		return b
	}
	node := protowire.AppendBytes(protowire.AppendTag(nil, 3, protowire.BytesType), nil)
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7)
	for name, data := range map[string][]byte{
		"spec twice":          request(taskOf(task, specField)),
		"task twice":          request(append(taskOf(task), taskOf(task)...)),
		"task then a node":    request(append(taskOf(task), node...)),
		"a node then a task":  request(append(node, taskOf(task)...)),
		"unknown in action":   request(append(taskOf(task), unknown...)),
		"unknown in task":     request(taskOf(task, unknown)),
		"unknown in request":  append(request(action), unknown...),
		"torn task":           request(taskOf(task[:len(task)-3])),
		"torn request":        request(action)[:len(placement)+len(action)-2],
		"garbage after":       append(request(action), 0xff),
		"empty spec":          request(taskOf(protowire.AppendBytes(protowire.AppendTag(nil, taskSpec, protowire.BytesType), nil))),
		"only an action kind": request(protowire.AppendVarint(protowire.AppendTag(nil, actionKind, protowire.VarintType), 2)),
	} {
		t.Run(name, func(t *testing.T) {
			decodesAsUnmarshal(t, &s, data)
			decodesAsUnmarshal(t, &specShare{}, data)
		})
	}
}

// firstField is the value of msg's first field num.
func firstField(msg []byte, num protowire.Number) []byte {
	for f := range wireFields(msg) {
		if f.num == num {
			return f.value
		}
	}
	return nil
}

// FuzzSpecShare: whatever the bytes, a decoder that has decoded a
// placement before decodes them as proto.Unmarshal does.
func FuzzSpecShare(f *testing.F) {
	f.Add(placementRequest(f, 1, 3))
	f.Add(append(placementRequest(f, 2, 2), placementRequest(f, 3, 1)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s specShare
		decodesAsUnmarshal(t, &s, placementRequest(t, 9, 2))
		decodesAsUnmarshal(t, &s, data)
	})
}

// BenchmarkDecodeRequest decodes a placement's write of 500 tasks, as a
// restart replays it and a follower applies it, and a join token's write,
// the most of a follower's at docs/bench/cluster.md's write rates:
// proto.Unmarshal against specShare, with the placement's spec decoded
// before.
func BenchmarkDecodeRequest(b *testing.B) {
	token, err := proposalEncoding.Marshal(&api.InternalRaftRequest{Id: 7, Actions: []*api.StoreAction{{
		Kind: api.StoreAction_KIND_CREATE, Target: &api.StoreAction_JoinToken{JoinToken: &api.JoinToken{
			Id: "caxvcdcmidmo2jijiihxzx6hzu", Meta: &api.Meta{Version: 12}, Hash: make([]byte, 32), Role: api.NodeRole_NODE_ROLE_WORKER}}}}})
	if err != nil {
		b.Fatal(err)
	}
	for name, data := range map[string][]byte{"placement": placementRequest(b, 1, 500), "token": token} {
		b.Run(name+"/proto.Unmarshal", func(b *testing.B) {
			for b.Loop() {
				if err := proto.Unmarshal(data, &api.InternalRaftRequest{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/specShare", func(b *testing.B) {
			var s specShare
			for b.Loop() {
				if _, err := s.decodeRequest(raftpb.Entry{Data: data}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
