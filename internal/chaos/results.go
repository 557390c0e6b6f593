package chaos

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// WriteResults writes the reliability table of reports to path as
// Markdown: nemesis × workload, with operations, violations, lost writes
// and how long writes stopped per episode (docs/reliability/).
func WriteResults(path string, reports []*Report, duration time.Duration) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Reliability under faults\n\n")
	fmt.Fprintf(&b, "Written by `make chaos` on %s: each nemesis injected faults for %s against a cluster\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), duration)
	fmt.Fprintf(&b, "in network namespaces, both workloads at once (internal/chaos, docs/design.md §14).\n")
	fmt.Fprintf(&b, "Unavailability is, per episode, the longest time no write was acknowledged anywhere.\n\n")
	fmt.Fprintf(&b, "| nemesis | managers | seed | workload | episodes | operations | ok | refused | unknown | violations | lost writes | unavailability p50 | max |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range reports {
		p50, longest := r.Unavailability()
		for _, w := range r.Workloads {
			violations := 0
			if !w.Result.OK() {
				violations = max(1, len(w.Result.Problems))
			}
			lost := "–"
			if w.Workload == "set" {
				lost = fmt.Sprint(w.Lost)
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %s | %d | %d | %d | %d | %d | %d | %s | %s | %s |\n",
				r.Nemesis, r.Managers, r.Seed, w.Workload, len(r.Events), w.Ops, w.OK, w.Refused, w.Unknown, violations, lost,
				round(p50), round(longest))
		}
		if len(r.Workloads) == 0 {
			fmt.Fprintf(&b, "| %s | %d | %d | – | %d | – | – | – | – | run failed | – | %s | %s |\n",
				r.Nemesis, r.Managers, r.Seed, len(r.Events), round(p50), round(longest))
		}
	}
	for _, r := range reports {
		if r.Failed() {
			fmt.Fprintf(&b, "\n## %s (seed %d): failed\n\n```\n%s```\n", r.Nemesis, r.Seed, r)
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}
