package manager

import (
	"context"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

// TestClusterChanged: a change of the cluster object is received, a
// change of another object is not, and the channel closes when its
// context ends.
func TestClusterChanged(t *testing.T) {
	m, _, _ := openTestManager(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changed := m.ClusterChanged(ctx)
	write := func(obj store.Object) {
		t.Helper()
		if err := m.store.Update(ctx, func(tx *store.Tx) error { return tx.Create(obj) }); err != nil {
			t.Fatal(err)
		}
	}
	write(&api.Service{Id: "other-service", Meta: &api.Meta{}, Spec: &api.ServiceSpec{Name: "other"}})
	write(&api.Cluster{Id: "test-cluster", Meta: &api.Meta{}})
	select {
	case _, ok := <-changed:
		if !ok {
			t.Fatal("closed before ctx ended")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no change received 10 s after the cluster object was written")
	}
	select {
	case <-changed:
		t.Fatal("a second change received: the service's write is not the cluster's")
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	select {
	case _, ok := <-changed:
		if ok {
			t.Fatal("a change received after ctx ended, none written")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not closed 10 s after ctx ended")
	}
}
