package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// medianP99 is the nearest-rank median and 99th percentile of vs (with
// five rounds the p99 is the slowest round). Zero for no values.
func medianP99(vs []float64) (median, p99 float64) {
	if len(vs) == 0 {
		return 0, 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return rank(0.50), rank(0.99)
}

// updateRow is one configuration's line of the summary table.
type updateRow struct {
	Config                   updateConfig
	Rounds                   int
	FloorMedian, FloorP99    float64
	JacoMedian, JacoP99      float64
	LeaderMedian             float64
	RatioMedian, RatioP99    string
	PerReplicaMedianMS       float64 // of the rounds' medians of update call → RUNNING, ms
	PerReplicaCreatedToRunMS float64 // of the rounds' medians of task created → RUNNING, ms
}

// updateRows summarizes the samples per configuration, in updateConfigs'
// order (any other configuration found follows); the floor of a
// configuration is the floor sample of the same parallelism.
func updateRows(samples []*updateSample) []updateRow {
	var order []updateConfig
	seen := map[updateConfig]bool{}
	for _, c := range updateConfigs {
		seen[c] = true
		order = append(order, c)
	}
	for _, s := range samples {
		if s.Kind == "jaco" && !seen[s.Config] {
			seen[s.Config] = true
			order = append(order, s.Config)
		}
	}
	var rows []updateRow
	for _, c := range order {
		var floor, jaco, leader, perRep, createdRun []float64
		for _, s := range samples {
			switch {
			case s.Kind == "floor" && s.Config.Parallelism == c.Parallelism:
				floor = append(floor, s.TotalS)
			case s.Kind == "jaco" && s.Config == c:
				jaco = append(jaco, s.TotalS)
				leader = append(leader, s.LeaderS)
				if ph, ok := phaseByPrefix(s.Phases, "1 "); ok {
					perRep = append(perRep, ph.P50)
				}
				if ph, ok := phaseByPrefix(s.Phases, "2 "); ok {
					tail := ph.P50
					for _, k := range []string{"3 ", "4 "} {
						if p, ok := phaseByPrefix(s.Phases, k); ok {
							tail += p.P50
						}
					}
					createdRun = append(createdRun, tail)
				}
			}
		}
		if len(jaco) == 0 {
			continue
		}
		r := updateRow{Config: c, Rounds: len(jaco)}
		r.FloorMedian, r.FloorP99 = medianP99(floor)
		r.JacoMedian, r.JacoP99 = medianP99(jaco)
		r.LeaderMedian, _ = medianP99(leader)
		r.PerReplicaMedianMS, _ = medianP99(perRep)
		r.PerReplicaCreatedToRunMS, _ = medianP99(createdRun)
		r.RatioMedian, r.RatioP99 = ratio(r.JacoMedian, r.FloorMedian), ratio(r.JacoP99, r.FloorP99)
		rows = append(rows, r)
	}
	return rows
}

func phaseByPrefix(ph map[string]latStats, prefix string) (latStats, bool) {
	for k, v := range ph {
		if strings.HasPrefix(k, prefix) {
			return v, true
		}
	}
	return latStats{}, false
}

// updatesTable is the summary table in markdown.
func updatesTable(rows []updateRow) string {
	var b strings.Builder
	b.WriteString("| policy | rounds | floor median (s) | floor p99 (s) | jaco median (s) | jaco p99 (s) | ratio median | ratio p99 | leader's started→completed, median (s) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| parallelism %d, monitor %s | %d | %.3f | %.3f | **%.3f** | %.3f | **%s** | %s | %.3f |\n",
			r.Config.Parallelism, r.Config.Monitor, r.Rounds, r.FloorMedian, r.FloorP99,
			r.JacoMedian, r.JacoP99, r.RatioMedian, r.RatioP99, r.LeaderMedian)
	}
	return b.String()
}

func updatesMarkdown(run *updatesRun) string {
	var b strings.Builder
	b.WriteString("# Rolling update of a hook-bundle service (raw results)\n\n")
	for _, k := range slices.Sorted(maps.Keys(run.Env)) {
		fmt.Fprintf(&b, "* %s: %s\n", k, run.Env[k])
	}
	opts, _ := json.Marshal(run.Opts)
	fmt.Fprintf(&b, "* options: `%s`\n\n", opts)
	b.WriteString("Ratio = jaco ÷ floor (same parallelism, same run). Medians and p99 over rounds (nearest rank).\n\n")
	b.WriteString(updatesTable(updateRows(run.Samples)))
	b.WriteString("\n## Every round\n\n| round | policy | kind | total (s) | leader (s) | UpdateService RPC (ms) | polls | load average |\n|---|---|---|---|---|---|---|---|\n")
	for _, s := range run.Samples {
		leader, rpc, polls := "", "", ""
		if s.Kind == "jaco" {
			leader, rpc, polls = f2(s.LeaderS), f1(s.RPCMS), fmt.Sprint(s.Polls)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %.3f | %s | %s | %s | %s |\n", s.Round, s.Config, s.Kind, s.TotalS, leader, rpc, polls, s.LoadAvg)
	}
	b.WriteString("\n## Where jaco's time goes (new replicas, ms, from the agent's log)\n\n| round | policy | phase | p50 | p99 | max |\n|---|---|---|---|---|---|\n")
	for _, s := range run.Samples {
		for _, k := range slices.Sorted(maps.Keys(s.Phases)) {
			p := s.Phases[k]
			fmt.Fprintf(&b, "| %d | %s | %s | %.0f | %.0f | %.0f |\n", s.Round, s.Config, k, p.P50, p.P99, p.Max)
		}
	}
	return b.String()
}

// writeUpdates writes results.json and results.md under out.
func writeUpdates(out string, run *updatesRun) error {
	if err := writeJSON(filepath.Join(out, "results.json"), run); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "results.md"), []byte(updatesMarkdown(run)), 0o644)
}

// rerenderUpdates writes results.md again from a results.json.
func rerenderUpdates(jsonPath string) error {
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return err
	}
	var run updatesRun
	if err := json.Unmarshal(b, &run); err != nil {
		return fmt.Errorf("%s: %w", jsonPath, err)
	}
	return os.WriteFile(filepath.Join(filepath.Dir(jsonPath), "results.md"), []byte(updatesMarkdown(&run)), 0o644)
}
