package store

import (
	"errors"
	"slices"
	"strconv"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

func TestSaveRestoreRoundTrip(t *testing.T) {
	src := seeded(t)
	err := src.Apply(2, req(
		act(t, create, &api.Cluster{Id: "c1", CaCertPem: []byte("ca")}),
		act(t, create, &api.JoinToken{Id: "j1", Hash: []byte("h"), Role: api.NodeRole_NODE_ROLE_WORKER}),
		act(t, update, task("t1", "s1", "n2", 1)),
	))
	if err != nil {
		t.Fatal(err)
	}

	dst := newStore(t)
	if err := dst.Apply(1, req(act(t, create, node("old", "h1", 0, 0)))); err != nil {
		t.Fatal(err)
	}
	if err := dst.Restore(src.Save(), 2); err != nil {
		t.Fatal(err)
	}
	sameContent(t, src, dst)
	if got := dst.AppliedIndex(); got != 2 {
		t.Errorf("AppliedIndex = %d, want 2", got)
	}
	dst.View(func(tx ReadTx) {
		if tx.GetNode("old") != nil {
			t.Error("Restore kept an object the snapshot does not hold")
		}
		if tx.FindNodeByHostname("h1").GetId() != "n1" || len(tx.ListTasksByNode("n2")) != 1 {
			t.Errorf("indexes not rebuilt: nodes %v, tasks %v", tx.ListNodes(), tx.ListTasks())
		}
	})
	// Writes go on from the restored versions.
	if err := dst.Apply(3, req(act(t, update, task("t1", "s1", "n1", 2)))); err != nil {
		t.Fatal(err)
	}
}

// Freeze gives what Save does, the join tokens as their stored bytes
// (docs/adr/0055): a snapshot carries them without decoding them.
func TestFreezeIsSaveWithTokensEncoded(t *testing.T) {
	s := seeded(t)
	err := s.Apply(2, req(
		act(t, create, &api.Cluster{Id: "c1", CaCertPem: []byte("ca")}),
		act(t, create, joinToken("j2", "hash-2", 0)),
		act(t, create, joinToken("j1", "hash-1", 0)),
	))
	if err != nil {
		t.Fatal(err)
	}
	frozen := s.Freeze()()
	if n := len(frozen.Objects.GetJoinTokens()); n != 0 || len(frozen.Encoded) != 1 || len(frozen.Encoded[0].Objects) != 2 {
		t.Fatalf("frozen: %d tokens decoded, encoded lists %v; want 0 and one list of 2", n, frozen.Encoded)
	}
	got, err := frozen.Decoded()
	if err != nil {
		t.Fatal(err)
	}
	if want := s.Save(); !proto.Equal(got, want) {
		t.Fatalf("frozen store decodes to\n%v\nwant Save's\n%v", got, want)
	}
}

func TestSaveIsSortedAndCopied(t *testing.T) {
	s := newStore(t)
	for i, id := range []string{"c", "a", "b"} {
		if err := s.Apply(uint64(i+1), req(act(t, create, task(id, "", "", 0)))); err != nil {
			t.Fatal(err)
		}
	}
	snap := s.Save()
	var ids []string
	for _, tk := range snap.GetTasks() {
		ids = append(ids, tk.GetId())
	}
	if !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Errorf("tasks saved in order %v", ids)
	}
	snap.Tasks[0].NodeId = "changed"
	s.View(func(tx ReadTx) {
		if tx.GetTask("a").GetNodeId() != "" {
			t.Error("changing the snapshot changed the store")
		}
	})
}

func TestRestoreRefusesBadSnapshot(t *testing.T) {
	tests := []struct {
		name    string
		snap    *api.StoreSnapshot
		wantErr error
	}{
		{"duplicate id", &api.StoreSnapshot{Tasks: []*api.Task{task("t1", "", "", 1), task("t1", "", "", 2)}}, ErrExists},
		{"duplicate hostname", &api.StoreSnapshot{Nodes: []*api.Node{node("n1", "h", 0, 1), node("n2", "h", 0, 1)}}, ErrExists},
		{"empty id", &api.StoreSnapshot{Services: []*api.Service{service("", "web", 1)}}, ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := seeded(t)
			before := saved(t, s)
			if err := s.Restore(tc.snap, 9); !errors.Is(err, tc.wantErr) {
				t.Fatalf("Restore = %v, want %v", err, tc.wantErr)
			}
			if string(saved(t, s)) != string(before) || s.AppliedIndex() != 1 {
				t.Errorf("refused snapshot changed the store (applied %d): %v", s.AppliedIndex(), s.Save())
			}
		})
	}
}

// SaveWithIndex pairs the content with the index it is the state at, even
// while entries apply: here entry i creates the i-th node.
func TestSaveWithIndexWhileApplying(t *testing.T) {
	s := newStore(t)
	const entries = 300
	reqs := make([]*api.InternalRaftRequest, entries)
	for i := range reqs {
		reqs[i] = req(act(t, create, node("n"+strconv.Itoa(i), "h"+strconv.Itoa(i), 0, 0)))
	}
	applied := make(chan error, 1)
	go func() {
		for i, r := range reqs {
			if err := s.Apply(uint64(i+1), r); err != nil {
				applied <- err
				return
			}
		}
		applied <- nil
	}()
	for {
		select {
		case err := <-applied:
			if err != nil {
				t.Fatal(err)
			}
		default:
		}
		snap, index := s.SaveWithIndex()
		if uint64(len(snap.Nodes)) != index {
			t.Fatalf("SaveWithIndex: %d nodes at index %d", len(snap.Nodes), index)
		}
		if index == entries {
			return
		}
	}
}
