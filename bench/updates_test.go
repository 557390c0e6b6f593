package main

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
)

func TestMedianP99NearestRank(t *testing.T) {
	for _, tc := range []struct {
		in          []float64
		median, p99 float64
	}{
		{nil, 0, 0},
		{[]float64{7}, 7, 7},
		// Five rounds, out of order: the third smallest, and the slowest.
		{[]float64{5, 1, 4, 2, 3}, 3, 5},
		// An even count takes the lower middle (nearest rank), never an
		// average no round measured.
		{[]float64{4, 1, 3, 2}, 2, 4},
	} {
		m, p := medianP99(tc.in)
		if m != tc.median || p != tc.p99 {
			t.Errorf("medianP99(%v) = %v, %v; want %v, %v", tc.in, m, p, tc.median, tc.p99)
		}
	}
	in := []float64{3, 1, 2}
	medianP99(in)
	if in[0] != 3 || in[1] != 1 {
		t.Errorf("medianP99 reordered its input: %v", in)
	}
}

// The summary pairs each jaco policy with the floor of the same
// parallelism from the same run: the 5 s-monitor row reuses the p=30
// floor, and the ratio is jaco ÷ floor.
func TestUpdateRowsPairEachPolicyWithItsFloor(t *testing.T) {
	p30 := updateConfig{Parallelism: 30}
	p30m := updateConfig{Parallelism: 30, Monitor: 5 * time.Second}
	var samples []*updateSample
	for r, v := range []float64{1, 3, 2} {
		samples = append(samples,
			&updateSample{Round: r + 1, Kind: "floor", Config: p30, TotalS: 0.1 * v},
			&updateSample{Round: r + 1, Kind: "jaco", Config: p30, TotalS: v, LeaderS: v / 2,
				Phases: map[string]latStats{"1 update call → task created": {P50: 10 * v}, "2 task created → PREPARING": {P50: v}, "4 STARTING → RUNNING (Start)": {P50: v}}},
			&updateSample{Round: r + 1, Kind: "jaco", Config: p30m, TotalS: 5 + v},
		)
	}
	rows := updateRows(samples)
	if len(rows) != 2 {
		t.Fatalf("rows = %+v, want the two measured policies", rows)
	}
	r := rows[0]
	if r.Config != p30 || r.Rounds != 3 || r.FloorMedian != 0.2 || r.JacoMedian != 2 || r.JacoP99 != 3 {
		t.Errorf("p=30 row = %+v", r)
	}
	if r.RatioMedian != "10.00" || r.LeaderMedian != 1 || r.PerReplicaMedianMS != 20 || r.PerReplicaCreatedToRunMS != 4 {
		t.Errorf("p=30 row ratio/leader/phases = %+v", r)
	}
	if m := rows[1]; m.Config != p30m || m.FloorMedian != 0.2 || m.JacoMedian != 7 || m.RatioMedian != "35.00" {
		t.Errorf("monitor row = %+v", m)
	}
	table := updatesTable(rows)
	for _, want := range []string{"| parallelism 30, monitor 0s | 3 | 0.200 |", "| parallelism 30, monitor 5s | 3 |", "**35.00**"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func TestUpdateRowsWithoutFloorHasNoRatio(t *testing.T) {
	rows := updateRows([]*updateSample{{Kind: "jaco", Config: updateConfig{Parallelism: 5}, TotalS: 1}})
	if len(rows) != 1 || rows[0].RatioMedian != "—" {
		t.Errorf("rows = %+v, want one row whose ratio is —", rows)
	}
}

// The turn gap is measured from the latest RUNNING before each task's
// creation; the first batch, created before anything ran, has none.
func TestTurnGapFromLatestRunningBeforeCreation(t *testing.T) {
	base := time.Unix(1000, 0)
	task := func(createdMS, runningMS int) *api.Task {
		return &api.Task{
			Meta:   &api.Meta{CreatedAt: timestamppb.New(base.Add(time.Duration(createdMS) * time.Millisecond))},
			Status: &api.TaskStatus{Timestamp: timestamppb.New(base.Add(time.Duration(runningMS) * time.Millisecond))},
		}
	}
	gap, ok := turnGap([]*api.Task{task(0, 100), task(0, 120), task(300, 400), task(600, 700)})
	// Second batch: 300 − 120; third: 600 − 400.
	if !ok || gap.N != 2 || gap.P50 != 180 || gap.Max != 200 {
		t.Errorf("turnGap = %+v, %v; want two gaps, 180 and 200 ms", gap, ok)
	}
	if _, ok := turnGap([]*api.Task{task(0, 100), task(1, 90)}); ok {
		t.Error("one batch created at once has no turn gap")
	}
}
