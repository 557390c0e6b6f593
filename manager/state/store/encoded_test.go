package store

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
)

func joinToken(id, hash string, version uint64) *api.JoinToken {
	return &api.JoinToken{Id: id, Meta: meta(version, 10, 10), Hash: []byte(hash), Role: api.NodeRole_NODE_ROLE_WORKER, ExpiresAt: ts(100)}
}

// Join tokens are kept encoded (docs/adr/0055): a token lives through its
// writes as a table of bare pointers would keep it, and what a read
// returns is the reader's.
func TestEncodedTableKeepsWhatWasWritten(t *testing.T) {
	s := newStore(t)
	if err := s.Apply(1, req(act(t, create, joinToken("j1", "hash-1", 0)), act(t, create, joinToken("j2", "hash-2", 0)))); err != nil {
		t.Fatal(err)
	}
	want := joinToken("j1", "hash-1", 1)
	s.View(func(tx ReadTx) {
		if got := tx.FindJoinTokenByHash([]byte("hash-1")); !proto.Equal(got, want) {
			t.Fatalf("token by hash = %v, want %v", got, want)
		}
		tx.GetJoinToken("j1").Role = api.NodeRole_NODE_ROLE_MANAGER
		if got := tx.GetJoinToken("j1"); !proto.Equal(got, want) {
			t.Fatalf("a read's change reached the store: %v", got)
		}
	})

	// A consumed token: the proposer's created_at does not move the
	// stored one, though the object was encoded before it was set.
	consumed := joinToken("j1", "hash-1", 1)
	consumed.Meta = meta(1, 99, 50)
	consumed.ConsumedAt = ts(50)
	if err := s.Apply(2, req(act(t, update, consumed))); err != nil {
		t.Fatal(err)
	}
	want.Meta, want.ConsumedAt = meta(2, 10, 50), ts(50)
	s.View(func(tx ReadTx) {
		if got := tx.GetJoinToken("j1"); !proto.Equal(got, want) {
			t.Fatalf("consumed token = %v, want %v", got, want)
		}
	})

	// A stale update is refused and leaves the token as it was.
	stale := joinToken("j1", "hash-other", 1)
	if err := s.Apply(3, req(act(t, update, stale))); !errors.Is(err, ErrVersionConflict) {
		t.Fatalf("stale update: %v, want ErrVersionConflict", err)
	}
	s.View(func(tx ReadTx) {
		if got := tx.FindJoinTokenByHash([]byte("hash-1")); !proto.Equal(got, want) {
			t.Fatalf("after a refused update, token by hash = %v, want %v", got, want)
		}
		if got := tx.FindJoinTokenByHash([]byte("hash-other")); got != nil {
			t.Fatalf("a refused update left %v in the hash index", got)
		}
	})

	// Through a Tx: a taken id is refused, a delete leaves no index entry.
	err := s.Update(context.Background(), func(tx *Tx) error { return tx.Create(joinToken("j2", "hash-3", 0)) })
	if !errors.Is(err, ErrExists) {
		t.Fatalf("create of a taken token id: %v, want ErrExists", err)
	}
	if err := s.Apply(4, req(act(t, del, joinToken("j2", "", 1)))); err != nil {
		t.Fatal(err)
	}
	s.View(func(tx ReadTx) {
		if got := tx.FindJoinTokenByHash([]byte("hash-2")); got != nil {
			t.Fatalf("deleted token still found by hash: %v", got)
		}
		if got := tx.ListJoinTokens(); len(got) != 1 || got[0].GetId() != "j1" {
			t.Fatalf("tokens = %v, want j1 alone", got)
		}
	})
}

// JoinTokensSpentBefore reads tokens in the order they were spent, the
// earlier of consumption and expiry, before the bound only, up to max.
func TestJoinTokensSpentBefore(t *testing.T) {
	s := newStore(t)
	tokens := []*api.JoinToken{
		{Id: "a", Hash: []byte("a"), ExpiresAt: ts(300)},
		{Id: "b", Hash: []byte("b"), ExpiresAt: ts(500), ConsumedAt: ts(100)},
		{Id: "c", Hash: []byte("c"), ExpiresAt: &timestamppb.Timestamp{Seconds: 200, Nanos: 1}},
		{Id: "d", Hash: []byte("d"), ExpiresAt: ts(-50)}, // before the epoch
		{Id: "e", Hash: []byte("e"), ExpiresAt: ts(200), ConsumedAt: ts(250)},
		{Id: "f", Hash: []byte("f")}, // no expiry: spent at the epoch
	}
	var acts []*api.StoreAction
	for _, jt := range tokens {
		acts = append(acts, act(t, create, jt))
	}
	if err := s.Apply(1, req(acts...)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		before int64
		max    int
		want   []string
	}{
		{before: 1000, max: 10, want: []string{"d", "f", "b", "e", "c", "a"}},
		{before: 200, max: 10, want: []string{"d", "f", "b"}},
		{before: 201, max: 4, want: []string{"d", "f", "b", "e"}},
		{before: -100, max: 10, want: nil},
	} {
		var got []string
		s.View(func(tx ReadTx) {
			for _, jt := range tx.JoinTokensSpentBefore(time.Unix(c.before, 0), c.max) {
				got = append(got, jt.GetId())
			}
		})
		if !slices.Equal(got, c.want) {
			t.Errorf("spent before %d, up to %d: %v, want %v", c.before, c.max, got, c.want)
		}
	}
}
