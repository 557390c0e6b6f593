// Package storetest gives tests a store whose writes commit at once, in
// order, as they would on a lone raft member, without raft: every batch is
// encoded as the raft entry would carry it, decoded again and applied with
// the next index before Update returns.
package storetest

import (
	"context"
	"testing"

	"github.com/jaco-project/jaco/manager/state/store"
)

// New returns a store that commits through a Proposer, closed when the
// test ends.
func New(t testing.TB) *store.Store {
	t.Helper()
	st, _ := NewWithProposer(t)
	return st
}

// NewWithProposer is New for tests that also count or interfere with the
// proposals.
func NewWithProposer(t testing.TB) (*store.Store, *Proposer) {
	t.Helper()
	st := store.New(nil)
	t.Cleanup(st.Close)
	p := &Proposer{st: st}
	st.SetProposer(p)
	return st, p
}

// Create writes objs in one batch, failing the test on error.
func Create(t testing.TB, st *store.Store, objs ...store.Object) {
	t.Helper()
	err := st.Update(context.Background(), func(tx *store.Tx) error {
		for _, o := range objs {
			if err := tx.Create(o); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("create %d objects: %v", len(objs), err)
	}
}
