package linearcheck

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Verdict is the conclusion of one check.
type Verdict string

const (
	// Linearizable is a history the check found nothing wrong with.
	Linearizable Verdict = "ok"
	// Violation is a history no correct cluster could have produced.
	Violation Verdict = "violation"
	// Inconclusive is a check that ran out of time: porcupine's search is
	// exponential in the worst case, so it is bounded, and a runner treats
	// this as a failure to shorten the run rather than as a pass.
	Inconclusive Verdict = "inconclusive"
)

// DefaultTimeout bounds porcupine's search when Options.Timeout is zero.
const DefaultTimeout = time.Minute

// Options names a check's run and where its evidence goes.
type Options struct {
	// Label identifies the run in the result and in file names: the
	// runner's seed and nemesis, e.g. "seed=42 nemesis=kill-leader".
	Label string
	// Dir receives the history and visualization when the verdict is not
	// Linearizable. Empty means write nothing.
	Dir string
	// Timeout bounds the linearizability search; zero is DefaultTimeout.
	Timeout time.Duration
}

func (o Options) timeout() time.Duration {
	if o.Timeout <= 0 {
		return DefaultTimeout
	}
	return o.Timeout
}

// Result is the outcome of checking one workload's history.
type Result struct {
	Label    string
	Workload string
	Verdict  Verdict
	// Problems says, one line each, what is wrong (empty when OK).
	Problems []string
	// HistoryFile and VisualizationFile are where the evidence was
	// written, empty when nothing was.
	HistoryFile       string
	VisualizationFile string
}

// OK reports whether the history passed.
func (r Result) OK() bool { return r.Verdict == Linearizable }

// String is the line a runner prints: label, verdict, problems and files.
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s [%s]: %s", r.Workload, r.Label, r.Verdict)
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "\n  %s", p)
	}
	if r.HistoryFile != "" {
		fmt.Fprintf(&b, "\n  history: %s", r.HistoryFile)
	}
	if r.VisualizationFile != "" {
		fmt.Fprintf(&b, "\n  visualization: %s", r.VisualizationFile)
	}
	return b.String()
}

// historyFile is the JSON written next to a failed check.
type historyFile struct {
	Label    string   `json:"label"`
	Workload string   `json:"workload"`
	Verdict  Verdict  `json:"verdict"`
	Problems []string `json:"problems,omitempty"`
	Ops      []Op     `json:"ops"`
	// Final is the set's content at the end (the set workload only).
	Final []string `json:"final,omitempty"`
}

// evidencePath returns dir/<label>-<workload>.<ext> with the label made
// safe for a file name.
func evidencePath(dir, label, workload, ext string) string {
	safe := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, label)
	if safe == "" {
		safe = "run"
	}
	return filepath.Join(dir, safe+"-"+workload+"."+ext)
}

// writeHistory writes the history file of a failed check into opts.Dir and
// records its path in res.
func writeHistory(opts Options, res *Result, ops []Op, final []string) error {
	if opts.Dir == "" {
		return nil
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return fmt.Errorf("linearcheck: create evidence dir: %w", err)
	}
	data, err := json.MarshalIndent(historyFile{
		Label: opts.Label, Workload: res.Workload, Verdict: res.Verdict,
		Problems: res.Problems, Ops: ops, Final: final,
	}, "", "  ")
	if err != nil {
		return fmt.Errorf("linearcheck: encode history: %w", err)
	}
	path := evidencePath(opts.Dir, opts.Label, res.Workload, "json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("linearcheck: write history: %w", err)
	}
	res.HistoryFile = path
	return nil
}
