package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
)

// statusLine matches the agent's "replica status" log lines (slog text).
var statusLine = regexp.MustCompile(`^time=(\S+) .*msg="replica status".* task_id=(\S+) state=(\S+)`)

// replicaPhases splits each replica's way to RUNNING, from jacod's log
// (written after offset) and the tasks' created_at:
// create call → task created (orchestrator), task created → PREPARING
// (scheduler, dispatcher, agent), PREPARING → STARTING (the runtime's
// Prepare), STARTING → RUNNING (its Start).
func replicaPhases(logPath string, offset int64, t0 time.Time, tasks []*api.Task) (map[string]latStats, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	at := map[string]map[string]time.Time{} // task → state → time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := statusLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ts, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			continue
		}
		if at[m[2]] == nil {
			at[m[2]] = map[string]time.Time{}
		}
		at[m[2]][m[3]] = ts
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	phases := map[string][]int64{}
	add := func(name string, from, to time.Time) {
		if !from.IsZero() && !to.IsZero() {
			phases[name] = append(phases[name], int64(to.Sub(from)))
		}
	}
	for _, t := range tasks {
		created := t.GetMeta().GetCreatedAt().AsTime()
		s := at[t.GetId()]
		prep := s[enumword.Of(api.TaskState_TASK_STATE_PREPARING)]
		start := s[enumword.Of(api.TaskState_TASK_STATE_STARTING)]
		run := s[enumword.Of(api.TaskState_TASK_STATE_RUNNING)]
		add("1 create call → task created", t0, created)
		add("2 task created → PREPARING", created, prep)
		add("3 PREPARING → STARTING (Prepare)", prep, start)
		add("4 STARTING → RUNNING (Start)", start, run)
	}
	out := map[string]latStats{}
	for k, v := range phases {
		out[k] = summarize(v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no replica status lines in %s", logPath)
	}
	return out, nil
}

// rerenderContainers writes results.md again from a results.json.
func rerenderContainers(jsonPath string) error {
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return err
	}
	var run containersRun
	if err := json.Unmarshal(b, &run); err != nil {
		return fmt.Errorf("%s: %w", jsonPath, err)
	}
	return os.WriteFile(filepath.Join(filepath.Dir(jsonPath), "results.md"), []byte(containersMarkdown(&run)), 0o644)
}

// writeContainers writes results.json and results.md under out.
func writeContainers(out string, run *containersRun) error {
	if err := writeJSON(filepath.Join(out, "results.json"), run); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "results.md"), []byte(containersMarkdown(run)), 0o644)
}

// floorTitles names every floor; a floor not in it is refused.
var floorTitles = map[string]string{
	"ctr":               "floor: `ctr run -d`, one at a time (no CNI)",
	"client":            "floor: Go client + CNI, one at a time",
	"client-concurrent": "floor: Go client + CNI, all N at once",
	"client-4-at-once":  "floor: Go client + CNI, all N from one start, at most 4 at once",
	"client-bare-cni":   "floor: Go client + bridge-only CNI (no iptables), one at a time",
}

func containersMarkdown(run *containersRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Create → running, containerd + runc\n\n")
	for _, k := range slices.Sorted(maps.Keys(run.Env)) {
		fmt.Fprintf(&b, "* %s: %s\n", k, run.Env[k])
	}
	fmt.Fprintf(&b, "* options: %v\n\n", run.Opts)
	fmt.Fprintf(&b, "Latencies in ms. Sequential floors time each container from its own start; "+
		"the floors that start many at once and jaco time every container from one common start, so their p50 includes queueing behind the others.\n\n")
	b.WriteString("| round | measurement | p50 | p99 | max | all running (s) | jaco p50 ÷ this p50 | jaco p99 ÷ this p99 | jaco all ÷ this all |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range run.Rounds {
		j := r.Jaco
		for _, f := range r.Floors {
			rp50, rp99, rall := "", "", ""
			if j != nil {
				rp50, rp99 = ratio(j.FromCreate.P50, f.Latency.P50), ratio(j.FromCreate.P99, f.Latency.P99)
				rall = ratio(j.TotalS, f.TotalS)
			}
			fmt.Fprintf(&b, "| %d | %s | %.0f | %.0f | %.0f | %.2f | %s | %s | %s |\n", r.Round, floorTitles[f.Kind],
				f.Latency.P50, f.Latency.P99, f.Latency.Max, f.TotalS, rp50, rp99, rall)
		}
		if j == nil {
			continue
		}
		fmt.Fprintf(&b, "| %d | **jaco**: create call → RUNNING (agent timestamp) | **%.0f** | **%.0f** | %.0f | %.2f | | | |\n",
			r.Round, j.FromCreate.P50, j.FromCreate.P99, j.FromCreate.Max, j.TotalS)
		fmt.Fprintf(&b, "| %d | jaco: service created_at → RUNNING | %.0f | %.0f | %.0f | | | | |\n",
			r.Round, j.FromServiceCreatedAt.P50, j.FromServiceCreatedAt.P99, j.FromServiceCreatedAt.Max)
		fmt.Fprintf(&b, "| %d | jaco: task created_at → RUNNING | %.0f | %.0f | %.0f | | | | |\n",
			r.Round, j.FromTaskCreated.P50, j.FromTaskCreated.P99, j.FromTaskCreated.Max)
		if j.SeenByClient.N > 0 {
			fmt.Fprintf(&b, "| %d | jaco: create call → seen running by a client polling every 100 ms | %.0f | %.0f | %.0f | | | | |\n",
				r.Round, j.SeenByClient.P50, j.SeenByClient.P99, j.SeenByClient.Max)
		}
		if j.SeenByWatch.N > 0 {
			fmt.Fprintf(&b, "| %d | jaco: create call → seen running by `service create`'s watch | %.0f | %.0f | %.0f | | | | |\n",
				r.Round, j.SeenByWatch.P50, j.SeenByWatch.P99, j.SeenByWatch.Max)
			fmt.Fprintf(&b, "| %d | jaco: agent's RUNNING → seen by the watch | %.0f | %.0f | %.0f | | | | |\n",
				r.Round, j.WatchLag.P50, j.WatchLag.P99, j.WatchLag.Max)
		}
	}
	allRoundsMarkdown(&b, run)
	b.WriteString("\n## Where the time goes\n\n")
	b.WriteString("| round | measurement | phase | p50 | p99 | max |\n|---|---|---|---|---|---|\n")
	for _, r := range run.Rounds {
		for _, f := range r.Floors {
			for _, k := range slices.Sorted(maps.Keys(f.Phases)) {
				s := f.Phases[k]
				fmt.Fprintf(&b, "| %d | %s | %s | %.0f | %.0f | %.0f |\n", r.Round, f.Kind, k, s.P50, s.P99, s.Max)
			}
		}
		if r.Jaco != nil {
			for _, k := range slices.Sorted(maps.Keys(r.Jaco.Phases)) {
				s := r.Jaco.Phases[k]
				fmt.Fprintf(&b, "| %d | jaco | %s | %.0f | %.0f | %.0f |\n", r.Round, k, s.P50, s.P99, s.Max)
			}
			fmt.Fprintf(&b, "| %d | jaco | CreateService RPC | %.0f | | |\n", r.Round, r.Jaco.CreateRPCMS)
		}
	}
	b.WriteString("\nLoad average (1, 5, 15 min) at the start of each round: ")
	for i, r := range run.Rounds {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "round %d: %s", r.Round, r.LoadAvg)
	}
	b.WriteString("\n")
	return b.String()
}
