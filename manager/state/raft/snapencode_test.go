package raft

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
)

// TestEncodeSnapshotDecodesAsMarshal: a snapshot encoded in runs, across
// several paced chunks, decodes to what proto.Marshal's encoding of the
// same snapshot decodes to, with or without rests; it rests after each
// chunk until hurried, and not at all when hurried from the start.
func TestEncodeSnapshotDecodesAsMarshal(t *testing.T) {
	now := timestamppb.New(time.Unix(1_700_000_000, 5))
	store := &api.StoreSnapshot{
		Clusters: []*api.Cluster{{Id: "c1", Meta: &api.Meta{Version: 3}}},
		Nodes:    []*api.Node{{Id: "n1"}, {Id: "n2"}},
		Services: []*api.Service{{Id: "s1", Spec: &api.ServiceSpec{Name: "web", Env: []string{"A=1"}}}},
		Tasks:    []*api.Task{{Id: "t1", ServiceId: "s1"}},
		Secrets:  []*api.Secret{{Id: "x1"}},
	}
	// 3 MB of join tokens: three chunks and a rest after each.
	for i := range 20_000 {
		store.JoinTokens = append(store.JoinTokens, &api.JoinToken{
			Id: fmt.Sprintf("token-%08d", i), Hash: make([]byte, 128), ExpiresAt: now,
			Meta: &api.Meta{Version: uint64(i), CreatedAt: now, UpdatedAt: now},
		})
	}
	members := []*api.RaftMember{{RaftId: 1, Address: "127.0.0.1:1"}, {RaftId: 2, Address: "127.0.0.1:2"}}
	removed := []*api.RaftMember{{RaftId: 9}}
	want := &api.RaftSnapshot{Store: store, Members: members, RemovedMembers: removed}
	// The second half of the tokens come encoded, as a store keeping
	// them encoded gives them.
	frozen := api.FrozenStore{Objects: proto.CloneOf(store), Encoded: []api.EncodedObjects{{Field: joinTokensList}}}
	for _, jt := range frozen.Objects.JoinTokens[10_000:] {
		data, err := proto.Marshal(jt)
		if err != nil {
			t.Fatal(err)
		}
		frozen.Encoded[0].Objects = append(frozen.Encoded[0].Objects, data)
	}
	frozen.Objects.JoinTokens = frozen.Objects.JoinTokens[:10_000]
	if proto.Size(store) < 3*pacedChunk {
		t.Fatalf("store of %d bytes: too small to cross chunks", proto.Size(store))
	}
	defer func(r func(time.Duration)) { restFor = r }(restFor)
	for _, c := range []struct {
		hurried bool
		hurryAt int // the rest that hurries; 0 for none
		rests   int
	}{{true, 0, 0}, {false, 0, 3}, {false, 1, 1}} {
		var hurry atomic.Bool
		hurry.Store(c.hurried)
		rests := 0
		restFor = func(d time.Duration) {
			rests++
			if d <= 0 {
				t.Errorf("rest of %v", d)
			}
			if rests == c.hurryAt {
				hurry.Store(true)
			}
		}
		hurried := c.hurried
		data, err := encodeSnapshot(frozen, members, removed, &hurry, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got api.RaftSnapshot
		if err := proto.Unmarshal(data, &got); err != nil {
			t.Fatalf("hurried %v: decode: %v", hurried, err)
		}
		if !proto.Equal(want, &got) {
			t.Fatalf("hurried %v: the decoded snapshot differs from the one encoded", hurried)
		}
		if rests != c.rests {
			t.Errorf("hurried %v, hurried at rest %d: %d rests, want %d", hurried, c.hurryAt, rests, c.rests)
		}
	}
}

// TestEncodeSnapshotCoversEveryList: every list of StoreSnapshot, found
// through its descriptor, survives encodeSnapshot, so a table added to
// the store is not left out of snapshots.
func TestEncodeSnapshotCoversEveryList(t *testing.T) {
	store := &api.StoreSnapshot{}
	m := store.ProtoReflect()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !fd.IsList() || fd.Message() == nil {
			t.Fatalf("StoreSnapshot.%s is not a list of objects: encodeSnapshot encodes only those", fd.Name())
		}
		list := m.Mutable(fd).List()
		obj := list.NewElement()
		if id := fd.Message().Fields().ByName("id"); id != nil {
			obj.Message().Set(id, protoreflect.ValueOfString(string(fd.Name())+"-1"))
		}
		list.Append(obj)
	}
	var hurry atomic.Bool
	data, err := encodeSnapshot(api.FrozenStore{Objects: store}, nil, nil, &hurry, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got api.RaftSnapshot
	if err := proto.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	for i := range fields.Len() {
		fd := fields.Get(i)
		if n := got.GetStore().ProtoReflect().Get(fd).List().Len(); n != 1 {
			t.Errorf("StoreSnapshot.%s: %d objects after encoding, want 1", fd.Name(), n)
		}
	}
}

// TestEncodeSnapshotKeepsAnEmptyStore: a store with no objects decodes as
// an empty store, not as none, as proto.Marshal's encoding does.
func TestEncodeSnapshotKeepsAnEmptyStore(t *testing.T) {
	var hurry atomic.Bool
	data, err := encodeSnapshot(api.FrozenStore{Objects: &api.StoreSnapshot{}}, nil, nil, &hurry, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got api.RaftSnapshot
	if err := proto.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if got.Store == nil {
		t.Fatal("an empty store decodes as no store")
	}
}

// BenchmarkEncodeSnapshot encodes the store the write-rate benchmark
// leaves (scripts/bench-cluster.sh: 440 000 join tokens after 55 s at
// 8 000/s), without rests. "adjacent" encodes the tokens in the order
// they were allocated, so each one's parts lie next to the previous
// one's; "scattered" in a shuffled order, as a daemon's store holds
// objects decoded at different times among everything else it allocated.
// Each encoding is sized by the one before, as the daemon sizes a
// snapshot by its previous one.
func BenchmarkEncodeSnapshot(b *testing.B) {
	const tokens = 440_000
	now := timestamppb.Now()
	list := make([]*api.JoinToken, tokens)
	for i := range list {
		list[i] = &api.JoinToken{Id: fmt.Sprintf("%025d", i), Hash: make([]byte, 32), Role: api.NodeRole_NODE_ROLE_WORKER,
			Meta:      &api.Meta{Version: uint64(i + 1), CreatedAt: timestamppb.New(now.AsTime()), UpdatedAt: timestamppb.New(now.AsTime())},
			ExpiresAt: timestamppb.New(now.AsTime().Add(time.Hour))}
	}
	shuffled := slices.Clone(list)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, c := range []struct {
		name string
		list []*api.JoinToken
	}{{"adjacent", list}, {"scattered", shuffled}} {
		b.Run(c.name, func(b *testing.B) {
			var hurry atomic.Bool
			hurry.Store(true)
			st := &api.StoreSnapshot{JoinTokens: c.list}
			size := 0
			for b.Loop() {
				data, err := encodeSnapshot(api.FrozenStore{Objects: st}, nil, nil, &hurry, size)
				if err != nil {
					b.Fatal(err)
				}
				size = len(data)
				b.SetBytes(int64(size))
			}
		})
	}
}

var joinTokensList = (&api.StoreSnapshot{}).ProtoReflect().Descriptor().Fields().ByName("join_tokens").Number()
