package backup

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/metrics/metricstest"
	"github.com/jaco-project/jaco/manager/backup/backupfile"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

func TestNextAttempt(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	on := func(interval time.Duration, rec *api.BackupRecord) *api.Cluster {
		return &api.Cluster{BackupSchedule: &api.BackupSchedule{Interval: durationpb.New(interval), Dir: "/b", Keep: 3}, LastBackup: rec}
	}
	for _, tc := range []struct {
		name        string
		c           *api.Cluster
		lastAttempt time.Time
		want        time.Time
		on          bool
	}{
		{"never set", &api.Cluster{}, time.Time{}, time.Time{}, false},
		{"turned off", on(0, nil), time.Time{}, time.Time{}, false},
		{"no backup yet: at once", on(time.Hour, nil), time.Time{}, time.Time{}, true},
		{"an interval after the last success, whoever wrote it", on(time.Hour,
			&api.BackupRecord{LastSuccessAt: timestamppb.New(t0)}), time.Time{}, t0.Add(time.Hour), true},
		{"a failure is retried after a minute at most", on(time.Hour,
			&api.BackupRecord{LastSuccessAt: timestamppb.New(t0.Add(-2 * time.Hour)), LastFailureAt: timestamppb.New(t0)}),
			time.Time{}, t0.Add(time.Minute), true},
		{"or after the interval when it is shorter", on(10*time.Second,
			&api.BackupRecord{LastFailureAt: timestamppb.New(t0)}), time.Time{}, t0.Add(10 * time.Second), true},
		{"an unrecorded attempt of this manager's is not repeated at once", on(time.Hour, nil), t0, t0.Add(time.Minute), true},
	} {
		got, on := nextAttempt(tc.c, tc.lastAttempt)
		if on != tc.on || !got.Equal(tc.want) {
			t.Errorf("%s: %v, %v; want %v, %v", tc.name, got, on, tc.want, tc.on)
		}
	}
}

func TestFileNamesSortByTime(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.FixedZone("x", 3600))
	a, b := FileName("c1", t0, 900), FileName("c1", t0.Add(time.Second), 10)
	if a != "jaco-backup-c1-20260102T020405.006Z-900.jbk" {
		t.Errorf("name %s", a)
	}
	if a >= b {
		t.Errorf("%s sorts after the later %s", a, b)
	}
	if !ownFile("c1").MatchString(a) || ownFile("c2").MatchString(a) || ownFile("c").MatchString(a) {
		t.Error("a name matches another cluster's pattern, or not its own")
	}
}

func TestPruneKeepsNewestAndLeavesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var ours []string
	for i := range 5 {
		name := FileName("c1", t0.Add(time.Duration(i)*time.Minute), uint64(100-i))
		path, err := writeFile(dir, name, []byte("sealed"))
		if err != nil {
			t.Fatal(err)
		}
		ours = append(ours, filepath.Base(path))
	}
	if _, err := writeFile(dir, ours[0], []byte("again")); err == nil {
		t.Error("a backup replaced an existing file")
	}
	others := []string{FileName("c2", t0, 1), "notes.txt", ours[0] + ".bak", "." + FileName("c2", t0, 1) + ".tmp-123"}
	// What a manager that died mid-write leaves: removed with the old files.
	if err := os.WriteFile(filepath.Join(dir, "."+ours[1]+".tmp-4242"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range others {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := prune(dir, "c1", 2)
	if err != nil || len(removed) != 4 {
		t.Fatalf("removed %v, %v; want the 3 oldest and the temporary file", removed, err)
	}
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := append(slices.Clone(ours[3:]), others...)
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
}

// runScheduler runs a scheduler over a store holding cluster until the
// test ends or stop is called, as the leader runner would, and returns the
// store, the scheduler and stop, which returns once Run has.
func runScheduler(t *testing.T, cluster *api.Cluster) (st *store.Store, s *Scheduler, stop func()) {
	t.Helper()
	st = storetest.New(t)
	storetest.Create(t, st, cluster)
	s = NewScheduler(NewServer(&fakeRaft{leader: true}, st), st, "node-a", slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	stop = sync.OnceFunc(func() {
		cancel()
		<-done // Run returns once leadership (ctx) ends
	})
	t.Cleanup(stop)
	return st, s, stop
}

// waitRecord waits until the store's backup record satisfies ok.
func waitRecord(t *testing.T, st *store.Store, ok func(*api.BackupRecord) bool) *api.BackupRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rec *api.BackupRecord
	changes := st.ViewAndWatch(ctx, func(tx store.ReadTx) { rec = tx.Cluster().GetLastBackup() }, store.ObjectType[*api.Cluster]())
	for !ok(rec) {
		select {
		case <-changes:
			st.View(func(tx store.ReadTx) { rec = tx.Cluster().GetLastBackup() })
		case <-ctx.Done():
			t.Fatalf("backup record %v never became what the test waits for", rec)
		}
	}
	return rec
}

func scheduledCluster(dir string, key backupfile.Key) *api.Cluster {
	return &api.Cluster{Id: "cluster-1", Meta: &api.Meta{}, CaCertPem: []byte("ca"), CaKeyPem: []byte("key"), BackupKey: key[:],
		BackupSchedule: &api.BackupSchedule{Interval: durationpb.New(20 * time.Millisecond), Dir: dir, Keep: 2}}
}

func TestSchedulerWritesRecordsAndKeeps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "backups")
	key, err := backupfile.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	st, s, stop := runScheduler(t, scheduledCluster(dir, key))
	var times []time.Time
	rec := waitRecord(t, st, func(r *api.BackupRecord) bool {
		if at := r.GetLastSuccessAt(); at != nil && !slices.ContainsFunc(times, at.AsTime().Equal) {
			times = append(times, at.AsTime())
		}
		return len(times) >= 4
	})
	if rec.LastSuccessNodeId != "node-a" || filepath.Dir(rec.LastSuccessFile) != dir || rec.LastFailure != "" {
		t.Errorf("record %v", rec)
	}
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < 20*time.Millisecond {
			t.Errorf("backups %v apart, want the interval at least", gap)
		}
	}
	sealed, err := os.ReadFile(rec.LastSuccessFile)
	if err != nil {
		t.Fatal(err)
	}
	b, err := backupfile.Decode(sealed, key)
	if err != nil || b.ClusterID != "cluster-1" || b.Index != rec.LastSuccessIndex {
		t.Fatalf("recorded file: %v, %v", b, err)
	}
	// The schedule goes on writing: a fifth backup may be in the directory
	// before its prune. Stopped, the scheduler has pruned what it wrote.
	stop()
	entries, _ := os.ReadDir(dir)
	if len(entries) > 2 {
		t.Errorf("%d files kept, want 2", len(entries))
	}
	if got := metricstest.Samples(t, s.Collector())["jaco_backup_last_success_timestamp_seconds"]; got < float64(times[3].Unix()) {
		t.Errorf("jaco_backup_last_success_timestamp_seconds %v, want at least the fourth backup's time %v", got, times[3].Unix())
	}
}

func TestSchedulerRecordsAFailureAndCountsIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	key, _ := backupfile.NewKey()
	st, s, _ := runScheduler(t, scheduledCluster(dir, key))
	rec := waitRecord(t, st, func(r *api.BackupRecord) bool { return r.GetLastFailure() != "" })
	if rec.LastSuccessAt != nil || rec.LastFailureNodeId != "node-a" || !strings.Contains(rec.LastFailure, "not a directory") {
		t.Errorf("record %v", rec)
	}
	got := metricstest.Samples(t, s.Collector())
	if got["jaco_backup_failures_total"] < 1 || got["jaco_backup_last_success_timestamp_seconds"] != 0 || got["jaco_backup_interval_seconds"] != 0.02 {
		t.Errorf("metrics %v, want a failure counted, no success, the interval", got)
	}
}
