package store

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
)

func newStore(t testing.TB) *Store {
	t.Helper()
	s := New(nil)
	t.Cleanup(s.Close)
	return s
}

func ts(sec int64) *timestamppb.Timestamp { return &timestamppb.Timestamp{Seconds: sec} }

func meta(version uint64, created, updated int64) *api.Meta {
	return &api.Meta{Version: version, CreatedAt: ts(created), UpdatedAt: ts(updated)}
}

func act(t testing.TB, kind api.StoreAction_Kind, obj Object) *api.StoreAction {
	t.Helper()
	a, err := newAction(kind, obj)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func req(actions ...*api.StoreAction) *api.InternalRaftRequest {
	return &api.InternalRaftRequest{Actions: actions}
}

func node(id, hostname string, raftID, version uint64) *api.Node {
	return &api.Node{Id: id, Hostname: hostname, RaftId: raftID, Meta: meta(version, 10, 10)}
}

func service(id, name string, version uint64) *api.Service {
	return &api.Service{Id: id, Spec: &api.ServiceSpec{Name: name}, Meta: meta(version, 10, 10)}
}

func task(id, serviceID, nodeID string, version uint64) *api.Task {
	return &api.Task{Id: id, ServiceId: serviceID, NodeId: nodeID, Meta: meta(version, 10, 10)}
}

// saved is the store's content as deterministic bytes.
func saved(t testing.TB, s *Store) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(s.Save())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameContent(t testing.TB, a, b *Store) {
	t.Helper()
	if !bytes.Equal(saved(t, a), saved(t, b)) {
		t.Fatalf("stores differ:\n%v\n%v", a.Save(), b.Save())
	}
}

// logProposer is a one-member raft stand-in: each proposal becomes the next
// entry, goes through the wire encoding, and is applied to every replica.
type logProposer struct {
	replicas []*Store
	mu       sync.Mutex
	log      [][]byte
}

func (p *logProposer) Propose(_ context.Context, actions []*api.StoreAction) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	index := uint64(len(p.log) + 1)
	data, err := proto.Marshal(&api.InternalRaftRequest{Id: index, Actions: actions})
	if err != nil {
		return err
	}
	p.log = append(p.log, data)
	return p.apply(index, data)
}

// apply decodes an entry afresh for each replica, as each would from its
// own log, and returns the first replica's verdict.
func (p *logProposer) apply(index uint64, data []byte) error {
	var first error
	for i, s := range p.replicas {
		r := &api.InternalRaftRequest{}
		if err := proto.Unmarshal(data, r); err != nil {
			return err
		}
		if err := s.Apply(index, r); i == 0 {
			first = err
		}
	}
	return first
}

// proposed is the number of entries proposed so far.
func (p *logProposer) proposed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.log)
}

// withProposer returns a store whose Update applies through a logProposer.
func withProposer(t testing.TB) (*Store, *logProposer) {
	s := newStore(t)
	p := &logProposer{replicas: []*Store{s}}
	s.SetProposer(p)
	return s, p
}
