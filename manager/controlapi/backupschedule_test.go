package controlapi

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/backup/backupfile"
	"github.com/jaco-project/jaco/manager/state/store"
)

func TestBackupScheduleIsCheckedWholeAndItsKeyShownOnce(t *testing.T) {
	s, st := newLimitsServer(t)
	ctx := context.Background()
	str := func(s string) *string { return &s }
	keep := func(n uint32) *uint32 { return &n }
	cluster := func() *api.Cluster {
		var c *api.Cluster
		st.View(func(tx store.ReadTx) { c = tx.Cluster() })
		return c
	}
	before := cluster()
	for _, bad := range []*api.UpdateClusterRequest{
		{BackupInterval: durationpb.New(59 * time.Second), BackupDir: str("/b")},
		{BackupInterval: durationpb.New(31 * 24 * time.Hour), BackupDir: str("/b")},
		{BackupInterval: durationpb.New(-time.Minute), BackupDir: str("/b")},
		{BackupInterval: durationpb.New(time.Hour)},                      // no dir
		{BackupInterval: durationpb.New(time.Hour), BackupDir: str("b")}, // relative
		{BackupInterval: durationpb.New(time.Hour), BackupDir: str("/b"), BackupKeep: keep(0)},
		{BackupKeep: keep(1001)},
		{BackupKey: &api.BackupKeyChange{Key: "JBK1-short"}},
		// A valid part does not go through beside an invalid one.
		{MaxServices: proto.Uint64(5), BackupInterval: durationpb.New(time.Second), BackupDir: str("/b")},
	} {
		if _, err := s.UpdateCluster(ctx, bad); reason.Of(err) != reason.InvalidSpec {
			t.Errorf("%v: %v, want invalid_spec", bad, err)
		}
	}
	if !proto.Equal(cluster(), before) {
		t.Fatal("refused updates changed the cluster object")
	}

	resp, err := s.UpdateCluster(ctx, &api.UpdateClusterRequest{BackupInterval: durationpb.New(time.Hour), BackupDir: str("/var/backups/../backups/")})
	if err != nil {
		t.Fatal(err)
	}
	k, err := backupfile.ParseKey(resp.BackupKey)
	if err != nil {
		t.Fatalf("first schedule: key %q: %v", resp.BackupKey, err)
	}
	want := &api.BackupSchedule{Interval: durationpb.New(time.Hour), Dir: "/var/backups", Keep: 7}
	if c := cluster(); !proto.Equal(c.BackupSchedule, want) || string(c.BackupKey) != string(k[:]) || !proto.Equal(resp.BackupSchedule, want) {
		t.Fatalf("stored %v key %x, answered %v; want %v and the key shown", c.BackupSchedule, c.BackupKey, resp.BackupSchedule, want)
	}

	// Off keeps the key; on again does not draw another.
	for _, d := range []time.Duration{0, 2 * time.Hour} {
		resp, err := s.UpdateCluster(ctx, &api.UpdateClusterRequest{BackupInterval: durationpb.New(d)})
		if err != nil || resp.BackupKey != "" || string(cluster().BackupKey) != string(k[:]) {
			t.Fatalf("interval %v: %v, %v; want the same key, not shown", d, resp, err)
		}
	}
	// Rotation draws a new one and shows it; an operator's own replaces it unshown.
	resp, err = s.UpdateCluster(ctx, &api.UpdateClusterRequest{BackupKey: &api.BackupKeyChange{}})
	if err != nil || resp.BackupKey == "" || resp.BackupKey == k.String() {
		t.Fatalf("rotate: %v, %v", resp, err)
	}
	own, _ := backupfile.NewKey()
	resp, err = s.UpdateCluster(ctx, &api.UpdateClusterRequest{BackupKey: &api.BackupKeyChange{Key: own.String()}})
	if err != nil || resp.BackupKey != "" || string(cluster().BackupKey) != string(own[:]) {
		t.Fatalf("operator's key: %v, %v", resp, err)
	}
}
