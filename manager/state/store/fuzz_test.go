package store

import (
	"bytes"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// FuzzRestoreSnapshot: the data of a raft snapshot (from disk or from the
// leader) decodes and restores, or is refused whole with the store left as
// it was; a restored store saves to a snapshot that restores to the same
// content.
func FuzzRestoreSnapshot(f *testing.F) {
	src := newStore(f)
	err := src.Apply(1, req(
		act(f, create, node("n1", "h1", 7, 0)),
		act(f, create, service("s1", "web", 0)),
		act(f, create, task("t1", "s1", "n1", 0)),
		act(f, create, &api.Cluster{Id: "c1", CaCertPem: []byte("ca")}),
		act(f, create, &api.JoinToken{Id: "j1", Hash: []byte("h"), Role: api.NodeRole_NODE_ROLE_WORKER}),
	))
	if err != nil {
		f.Fatal(err)
	}
	valid, err := proto.Marshal(&api.RaftSnapshot{
		Store:   src.Save(),
		Members: []*api.RaftMember{{RaftId: 7, NodeId: "n1", Address: "10.0.0.1:4242"}},
	})
	if err != nil {
		f.Fatal(err)
	}
	dup, err := proto.Marshal(&api.RaftSnapshot{Store: &api.StoreSnapshot{
		Nodes: []*api.Node{node("n1", "h1", 0, 0), node("n2", "h1", 0, 0)}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(dup)
	f.Add(valid[:len(valid)/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var rs api.RaftSnapshot
		if err := proto.Unmarshal(data, &rs); err != nil {
			return
		}
		dst := newStore(t)
		if err := dst.Apply(1, req(act(t, create, node("old", "h9", 0, 0)))); err != nil {
			t.Fatal(err)
		}
		before := saved(t, dst)
		if err := dst.Restore(rs.Store, 2); err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrExists) {
				t.Fatalf("Restore error %v is neither ErrInvalid nor ErrExists", err)
			}
			if !bytes.Equal(saved(t, dst), before) || dst.AppliedIndex() != 1 {
				t.Fatal("a refused snapshot changed the store")
			}
			return
		}
		again := newStore(t)
		if err := again.Restore(dst.Save(), 2); err != nil {
			t.Fatalf("a saved store does not restore: %v", err)
		}
		sameContent(t, dst, again)
	})
}
