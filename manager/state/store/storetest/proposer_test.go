package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

func node(st *store.Store, id string) (n *api.Node) {
	st.View(func(tx store.ReadTx) { n = tx.GetNode(id) })
	return n
}

func rename(st *store.Store, n *api.Node, hostname string) error {
	return st.Update(context.Background(), func(tx *store.Tx) error {
		n.Hostname = hostname
		return tx.Update(n)
	})
}

func TestProposalsCommitInOrderAndAreCounted(t *testing.T) {
	st, p := NewWithProposer(t)
	Create(t, st, &api.Node{Id: "n1", Hostname: "a"})
	Create(t, st, &api.Node{Id: "n2", Hostname: "b"})
	if got := st.AppliedIndex(); got != 2 {
		t.Errorf("applied index after two batches = %d, want 2", got)
	}
	if got := node(st, "n2").GetMeta().GetVersion(); got != 2 {
		t.Errorf("second batch's object has version %d, want its entry index 2", got)
	}
	if got := p.Proposals(); got != 2 {
		t.Errorf("Proposals() = %d, want 2", got)
	}
}

func TestHookCommitMakesStaleUpdateConflict(t *testing.T) {
	st, p := NewWithProposer(t)
	Create(t, st, &api.Node{Id: "n1", Hostname: "a"})
	stale := node(st, "n1")
	p.SetHook(func(commit func([]*api.StoreAction) error) error {
		other := node(st, "n1")
		other.Hostname = "other"
		return commit([]*api.StoreAction{{Kind: api.StoreAction_KIND_UPDATE, Target: &api.StoreAction_Node{Node: other}}})
	})
	err := rename(st, stale, "mine")
	if !errors.Is(err, store.ErrVersionConflict) {
		t.Fatalf("update behind another writer: err = %v, want ErrVersionConflict", err)
	}
	if got := node(st, "n1").GetHostname(); got != "other" {
		t.Errorf("hostname = %q, want the other writer's %q", got, "other")
	}
	if got := st.AppliedIndex(); got != 3 {
		t.Errorf("applied index = %d, want 3 (create, other writer, refused batch)", got)
	}
}

func TestHookErrorRefusesProposal(t *testing.T) {
	st, p := NewWithProposer(t)
	Create(t, st, &api.Node{Id: "n1", Hostname: "a"})
	refuse := errors.New("refused")
	p.SetHook(func(func([]*api.StoreAction) error) error { return refuse })
	if err := rename(st, node(st, "n1"), "b"); !errors.Is(err, refuse) {
		t.Fatalf("err = %v, want the hook's", err)
	}
	if got := node(st, "n1").GetHostname(); got != "a" {
		t.Errorf("refused proposal changed hostname to %q", got)
	}
	if got := p.Proposals(); got != 2 {
		t.Errorf("Proposals() = %d, want 2 (refused ones count)", got)
	}
	p.SetHook(nil)
	if err := rename(st, node(st, "n1"), "b"); err != nil {
		t.Fatalf("after SetHook(nil): %v", err)
	}
}
