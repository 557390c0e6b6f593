package controlapi

import (
	"bytes"
	"context"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

func TestAutolockKeyLifecycle(t *testing.T) {
	st := storetest.New(t)
	storetest.Create(t, st, &api.Cluster{Id: "c1", Meta: &api.Meta{}})
	s := New(st)
	ctx := context.Background()
	cluster := func() *api.Cluster {
		var c *api.Cluster
		st.View(func(tx store.ReadTx) { c = tx.GetCluster("c1") })
		return c
	}

	if _, err := s.UpdateCluster(ctx, &api.UpdateClusterRequest{RotateUnlockKey: true}); reason.Of(err) != reason.InvalidSpec {
		t.Fatalf("rotate with autolock off: %v, want invalid_spec", err)
	}
	on := true
	resp, err := s.UpdateCluster(ctx, &api.UpdateClusterRequest{Autolock: &on})
	if err != nil || !resp.Autolock {
		t.Fatalf("autolock on: %v, %v", resp, err)
	}
	first, err := encryption.ParseUnlockKey(resp.UnlockKey)
	if err != nil || !bytes.Equal(cluster().UnlockKey, first[:]) {
		t.Fatalf("key shown %q (%v) is not the key stored", resp.UnlockKey, err)
	}
	// Asking again changes nothing and shows no key.
	if resp, err := s.UpdateCluster(ctx, &api.UpdateClusterRequest{Autolock: &on}); err != nil || resp.UnlockKey != "" {
		t.Fatalf("autolock on again: %v, %v; want no new key", resp, err)
	}
	rot, err := s.UpdateCluster(ctx, &api.UpdateClusterRequest{RotateUnlockKey: true})
	if err != nil || rot.UnlockKey == "" || rot.UnlockKey == resp.UnlockKey {
		t.Fatalf("rotate: %v, %v", rot, err)
	}
	keys, err := s.GetUnlockKey(ctx, &api.GetUnlockKeyRequest{})
	if err != nil || keys.UnlockKey != rot.UnlockKey || keys.PreviousUnlockKey != resp.UnlockKey {
		t.Fatalf("GetUnlockKey = %v, %v; want current %s previous %s", keys, err, rot.UnlockKey, resp.UnlockKey)
	}
	off := false
	if resp, err := s.UpdateCluster(ctx, &api.UpdateClusterRequest{Autolock: &off}); err != nil || resp.Autolock {
		t.Fatalf("autolock off: %v, %v", resp, err)
	}
	if c := cluster(); c.Autolock || c.UnlockKey != nil || c.PreviousUnlockKey != nil {
		t.Fatalf("after autolock off the cluster still holds keys: %v", c)
	}
}
