package raft

import (
	"fmt"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// TestDecodeAheadInOrder: every entry's request comes back in log order,
// across more windows than may wait decoded, nil for an entry without a
// write; an entry that does not decode is an error at that entry, after
// every one before it came back; stop ends the workers however far the
// applier got.
func TestDecodeAheadInOrder(t *testing.T) {
	const count, corrupt = 40 * aheadWindow, 30*aheadWindow + 5
	ents := make([]raftpb.Entry, count)
	for i := range ents {
		ents[i] = raftpb.Entry{Type: raftpb.EntryNormal, Index: uint64(i + 1)}
		if i%7 == 3 {
			continue // raft's empty entry of a new term
		}
		data, err := proto.Marshal(&api.InternalRaftRequest{Id: uint64(i + 1)})
		if err != nil {
			t.Fatal(err)
		}
		ents[i].Data = data
	}
	check := func(a *ahead, upTo int) {
		t.Helper()
		for i := range upTo {
			req, err := a.request(i)
			if err != nil {
				t.Fatalf("entry %d: %v", i, err)
			}
			if (req == nil) != (i%7 == 3) || (req != nil && req.Id != uint64(i+1)) {
				t.Fatalf("entry %d: request %v", i, req)
			}
		}
	}
	a := decodeAhead(ents)
	check(a, count)
	a.stop()

	a = decodeAhead(ents)
	check(a, 10) // an applier that fails early
	a.stop()

	ents[corrupt].Data = []byte{0xff}
	a = decodeAhead(ents)
	defer a.stop()
	check(a, corrupt)
	if _, err := a.request(corrupt); err == nil {
		t.Fatalf("entry %d does not decode, and no error came back", corrupt)
	}
}

// TestDecodeAheadBoundsLargeEntries: entries of 100 KB go three to a
// window, not aheadWindow, so the decoded ahead of the applier stays a
// few MB however large the log's entries; each still comes back in order.
func TestDecodeAheadBoundsLargeEntries(t *testing.T) {
	ents := make([]raftpb.Entry, 50)
	for i := range ents {
		req := &api.InternalRaftRequest{Id: uint64(i + 1), Actions: []*api.StoreAction{{
			Kind:   api.StoreAction_KIND_CREATE,
			Target: &api.StoreAction_Task{Task: &api.Task{Id: fmt.Sprint(i), ServiceId: strings.Repeat("s", 100<<10)}},
		}}}
		data, err := proto.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		ents[i] = raftpb.Entry{Type: raftpb.EntryNormal, Index: uint64(i + 1), Data: data}
	}
	a := decodeAhead(ents)
	defer a.stop()
	for w := range len(a.starts) - 1 {
		if n := a.starts[w+1] - a.starts[w]; n > 3 {
			t.Errorf("window %d holds %d entries of 100 KB", w, n)
		}
	}
	for i := range ents {
		req, err := a.request(i)
		if err != nil {
			t.Fatal(err)
		}
		if req.GetId() != uint64(i+1) || req.GetActions()[0].GetTask().GetId() != fmt.Sprint(i) {
			t.Fatalf("entry %d: request %d", i, req.GetId())
		}
	}
}

// TestDecodeAheadSharesSpecs: the tasks of a window's entries with the
// same service, spec version and spec (maps included: proposals encode
// deterministically) come back holding one decoded spec; another version
// holds its own.
func TestDecodeAheadSharesSpecs(t *testing.T) {
	spec := func(image string) *api.ServiceSpec {
		return &api.ServiceSpec{Name: "web", Image: image, Labels: map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"}}
	}
	var ents []raftpb.Entry
	for i := range 4 {
		req := &api.InternalRaftRequest{Id: uint64(i + 1)}
		for j := range 10 {
			task := &api.Task{Id: fmt.Sprint(i, "-", j), ServiceId: "s1", SpecVersion: 1, Spec: spec("web:1")}
			if j == 9 {
				task.SpecVersion, task.Spec = 2, spec("web:2")
			}
			req.Actions = append(req.Actions, &api.StoreAction{Kind: api.StoreAction_KIND_UPDATE, Target: &api.StoreAction_Task{Task: task}})
		}
		req.Actions = append(req.Actions, &api.StoreAction{Kind: api.StoreAction_KIND_UPDATE, Target: &api.StoreAction_Node{Node: &api.Node{Id: "n1"}}})
		data, err := proposalEncoding.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		ents = append(ents, raftpb.Entry{Type: raftpb.EntryNormal, Index: uint64(i + 1), Data: data})
	}
	a := decodeAhead(ents)
	defer a.stop()
	var v1, v2 *api.ServiceSpec
	for i := range ents {
		req, err := a.request(i)
		if err != nil {
			t.Fatal(err)
		}
		for j, action := range req.Actions[:10] {
			task := action.GetTask()
			if i == 0 && j == 0 {
				v1 = task.Spec
			} else if i == 0 && j == 9 {
				v2 = task.Spec
			}
			if want := map[bool]*api.ServiceSpec{true: v2, false: v1}[j == 9]; task.Spec != want {
				t.Fatalf("entry %d, task %d: a spec of its own", i, j)
			}
		}
	}
	if v1 == v2 || v1.Image != "web:1" || v2.Image != "web:2" {
		t.Fatalf("versions 1 and 2 hold %v and %v", v1, v2)
	}
}
