package main

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	ctrd "github.com/jaco-project/jaco/agent/exec/containerd"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
)

// The bare floor must differ from jaco's network only in what does
// iptables work: same network, bridge and addresses, no masquerading, no
// portmap or firewall.
func TestBareConfListKeepsOnlyTheBridge(t *testing.T) {
	names, err := ctrd.NamesFor("node-a", floorSubnet)
	if err != nil {
		t.Fatal(err)
	}
	full, err := names.CNIConfList("/tmp/ipam")
	if err != nil {
		t.Fatal(err)
	}
	bare, err := bareConfList(full)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Name    string           `json:"name"`
		Plugins []map[string]any `json:"plugins"`
	}
	if err := json.Unmarshal(bare, &got); err != nil {
		t.Fatal(err)
	}
	if got.Name != names.Network || len(got.Plugins) != 1 {
		t.Fatalf("bare config %s: want network %s with one plugin", bare, names.Network)
	}
	p := got.Plugins[0]
	if p["type"] != "bridge" || p["bridge"] != names.Bridge || p["ipMasq"] != false {
		t.Fatalf("bare plugin %v: want the bridge %s with ipMasq false", p, names.Bridge)
	}
	ipam, _ := json.Marshal(p["ipam"])
	if !strings.Contains(string(ipam), floorSubnet) {
		t.Fatalf("bare ipam %s: want subnet %s kept", ipam, floorSubnet)
	}
}

// Phases come from log lines written the way the agent writes them (slog
// text, with the logger's own attributes first), and only from after the
// offset.
func TestReplicaPhasesFromAgentLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jacod.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var now time.Time
	h := slog.NewTextHandler(f, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Time(slog.TimeKey, now)
		}
		return a
	}})
	lg := slog.New(h).With("component", "agent")
	logAt := func(ms int, task string, st api.TaskState) {
		now = base.Add(time.Duration(ms) * time.Millisecond)
		lg.Info("replica status", "task_id", task, "state", enumword.Of(st), "reason", "", "message", "x y")
	}
	// An earlier round's line for the same task id must be skipped.
	logAt(-5000, "t1", api.TaskState_TASK_STATE_PREPARING)
	offset, _ := f.Seek(0, 1)
	logAt(100, "t1", api.TaskState_TASK_STATE_PREPARING)
	logAt(130, "t1", api.TaskState_TASK_STATE_STARTING)
	logAt(400, "t1", api.TaskState_TASK_STATE_RUNNING)
	lg.Info("something else", "task_id", "t1", "state", "running")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	task := &api.Task{Id: "t1", Meta: &api.Meta{CreatedAt: timestamppb.New(base.Add(2 * time.Millisecond))}}
	got, err := replicaPhases(path, offset, base, []*api.Task{task})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"1 create call → task created":     2,
		"2 task created → PREPARING":       98,
		"3 PREPARING → STARTING (Prepare)": 30,
		"4 STARTING → RUNNING (Start)":     270,
	}
	for k, v := range want {
		if s, ok := got[k]; !ok || s.N != 1 || s.P50 != v {
			t.Errorf("phase %q = %+v, want one sample of %v ms", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("phases %v, want %d", got, len(want))
	}
}

// The markdown renders every round and floor it is given, with ratios
// against the jaco figures of the same round.
func TestContainersMarkdownRatios(t *testing.T) {
	run := &containersRun{Env: map[string]string{"nproc": "2"}, Rounds: []*roundResult{{
		Round:  1,
		Floors: []*floorResult{{Kind: "ctr", N: 2, Latency: latStats{P50: 100, P99: 200}, TotalS: 1}},
		Jaco:   &jacoResult{N: 2, FromCreate: latStats{P50: 300, P99: 500}, TotalS: 2},
	}}}
	md := containersMarkdown(run)
	for _, want := range []string{"| 1 | " + floorTitles["ctr"] + " | 100 | 200 |", "| 3.00 | 2.50 | 2.00 |", "**300**"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// With more than one round, every sample is pooled: one replica a round
// still gives a p50 and p99, with ratios against the pooled floors; the
// watch's rows are there.
func TestContainersMarkdownAllRounds(t *testing.T) {
	round := func(n int, floor, jaco, watch, lag float64) *roundResult {
		return &roundResult{
			Round:  n,
			Floors: []*floorResult{{Kind: "client", N: 1, RawMS: []float64{floor}}},
			Jaco: &jacoResult{N: 1, RawMS: []float64{jaco}, RawWatchMS: []float64{watch}, RawLagMS: []float64{lag},
				SeenByWatch: latStats{N: 1, P50: watch}, WatchLag: latStats{N: 1, P50: lag}},
		}
	}
	run := &containersRun{Rounds: []*roundResult{round(1, 100, 150, 160, 10), round(2, 120, 210, 230, 20), round(3, 110, 180, 190, 10)}}
	md := containersMarkdown(run)
	for _, want := range []string{
		"## All rounds",
		"| " + floorTitles["client"] + " | 3 | 110 | 120 | 120 | 1.64 | 1.75 |",
		"| **jaco**: create call → RUNNING (agent timestamp) | 3 | 180 | 210 | 210 |  |  |",
		"| jaco: agent's RUNNING → seen by the watch | 3 | 10 | 20 | 20 |",
		"| 2 | jaco: create call → seen running by `service create`'s watch | 230 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "polling every 100 ms") {
		t.Error("a polling row without polling samples")
	}
}
