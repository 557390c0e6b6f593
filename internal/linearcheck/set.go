package linearcheck

import (
	"fmt"
	"maps"
	"slices"
)

// SetWorkload names the append-only set workload in results and file names.
const SetWorkload = "set"

// SetAdd is the input of an add to the append-only set. Every add sends an
// element no other add sends, so the final content can be traced back.
type SetAdd struct {
	Element string `json:"element"`
}

// CheckSet checks the adds in ops (those whose Input is a SetAdd; others are
// ignored) against final, the set's content read after the faults healed:
// every acknowledged add is present, nothing is present that was never
// sent or was refused, and nothing is present twice. An add whose outcome
// is Unknown may be present or absent. This needs no search, so it is
// checked directly rather than with porcupine. When the check fails it
// writes the history into opts.Dir; the error is about writing it.
func CheckSet(ops []Op, final []string, opts Options) (Result, error) {
	// outcome of each element's add; an element sent twice (a runner bug)
	// keeps its strongest claim, OK over Unknown over Refused.
	sent := map[string]Outcome{}
	rank := map[Outcome]int{Refused: 1, Unknown: 2, OK: 3}
	for _, op := range ops {
		in, ok := op.Input.(SetAdd)
		if !ok {
			continue
		}
		if rank[op.Outcome] > rank[sent[in.Element]] {
			sent[in.Element] = op.Outcome
		}
	}
	count := map[string]int{}
	for _, e := range final {
		count[e]++
	}

	var problems []string
	for _, e := range slices.Sorted(maps.Keys(sent)) {
		if sent[e] == OK && count[e] == 0 {
			problems = append(problems, fmt.Sprintf("lost: acknowledged add %q is missing at the end", e))
		}
	}
	for _, e := range slices.Sorted(maps.Keys(count)) {
		outcome, wasSent := sent[e]
		switch {
		case !wasSent:
			problems = append(problems, fmt.Sprintf("phantom: %q is present but was never sent", e))
		case outcome == Refused:
			problems = append(problems, fmt.Sprintf("phantom: %q is present but its add was refused", e))
		}
		if count[e] > 1 {
			problems = append(problems, fmt.Sprintf("duplicate: %q is present %d times", e, count[e]))
		}
	}

	res := Result{Label: opts.Label, Workload: SetWorkload, Verdict: Linearizable}
	if len(problems) == 0 {
		return res, nil
	}
	res.Verdict, res.Problems = Violation, problems
	return res, writeHistory(opts, &res, ops, final)
}
