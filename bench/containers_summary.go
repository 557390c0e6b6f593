package main

import (
	"fmt"
	"slices"
	"strings"
)

// allRoundsMarkdown writes every measurement's samples pooled over all
// rounds: with few replicas per round (one, to time a lone replica), a
// round's p50 and p99 are a single sample, and only the pool has a
// distribution.
func allRoundsMarkdown(b *strings.Builder, run *containersRun) {
	if len(run.Rounds) < 2 {
		return
	}
	pooled := map[string][]float64{}
	var order []string
	add := func(title string, xs []float64) {
		if len(xs) == 0 {
			return
		}
		if _, ok := pooled[title]; !ok {
			order = append(order, title)
		}
		pooled[title] = append(pooled[title], xs...)
	}
	const jacoTitle = "**jaco**: create call → RUNNING (agent timestamp)"
	for _, r := range run.Rounds {
		for _, f := range r.Floors {
			add(floorTitles[f.Kind], f.RawMS)
		}
	}
	for _, r := range run.Rounds {
		if j := r.Jaco; j != nil {
			add(jacoTitle, j.RawMS)
			add("jaco: create call → seen running by `service create`'s watch", j.RawWatchMS)
			add("jaco: agent's RUNNING → seen by the watch", j.RawLagMS)
		}
	}
	jaco := pooled[jacoTitle]
	fmt.Fprintf(b, "\n## All rounds\n\nEvery sample of every round, pooled (ms).\n\n")
	b.WriteString("| measurement | samples | p50 | p99 | max | jaco p50 ÷ this p50 | jaco p99 ÷ this p99 |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, title := range order {
		xs := pooled[title]
		r50, r99 := "", ""
		if len(jaco) > 0 && strings.HasPrefix(title, "floor:") {
			r50, r99 = ratio(quantileMS(jaco, 0.5), quantileMS(xs, 0.5)), ratio(quantileMS(jaco, 0.99), quantileMS(xs, 0.99))
		}
		fmt.Fprintf(b, "| %s | %d | %.0f | %.0f | %.0f | %s | %s |\n", title, len(xs),
			quantileMS(xs, 0.5), quantileMS(xs, 0.99), slices.Max(xs), r50, r99)
	}
}

// quantileMS is the q-quantile of xs by nearest rank (xs is not changed).
func quantileMS(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return percentile(s, q)
}
