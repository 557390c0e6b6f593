package backup

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
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
	others := []string{FileName("c2", t0, 1), "notes.txt", ours[0] + ".bak"}
	for _, name := range others {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := prune(dir, "c1", 2)
	if err != nil || len(removed) != 3 {
		t.Fatalf("removed %v, %v; want the 3 oldest", removed, err)
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
