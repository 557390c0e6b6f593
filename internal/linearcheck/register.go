package linearcheck

import (
	"fmt"
	"slices"

	"github.com/anishathalye/porcupine"
)

// RegisterWorkload names the register workload in results and file names.
const RegisterWorkload = "registers"

// RegisterInput is the input of a register operation: a read of Key, or a
// write of Value to Key that succeeds only if Key is still at Expect, the
// version the client read (0: Key must not exist yet, a create).
type RegisterInput struct {
	Key    string `json:"key"`
	Write  bool   `json:"write,omitempty"`
	Value  string `json:"value,omitempty"`
	Expect uint64 `json:"expect_version,omitempty"`
}

// RegisterOutput is what an OK register operation returned: for a read the
// value and version it saw, for a write the version it created (only Version
// is set). Versions are opaque: the model only compares them, because the
// client cannot know which version the cluster will give a write. A write
// whose answer did not show its version (the server answered with the
// object as it stood later) has Version 0: applied, at a version a later
// operation reveals.
type RegisterOutput struct {
	Value   string `json:"value,omitempty"`
	Version uint64 `json:"version"`
}

// regState is one key's state in the model. A write whose outcome is
// Unknown and that took effect leaves the version unknown until a read or
// a later write reveals it.
type regState struct {
	value          string
	version        uint64
	versionUnknown bool
}

// regOutput is a porcupine output: an OK answer, or none for an Unknown
// write.
type regOutput struct {
	out     RegisterOutput
	unknown bool
}

// matches reports whether a write expecting version expect could apply in
// state s. An unknown version was set by an applied write, so it is never
// 0 (absent) but may be any other version the client later read.
func (s regState) matches(expect uint64) bool {
	if s.versionUnknown {
		return expect != 0
	}
	return s.version == expect
}

func regStep(state, input, output any) []any {
	s, in, out := state.(regState), input.(RegisterInput), output.(regOutput)
	if !in.Write {
		if out.out.Value != s.value || (!s.versionUnknown && out.out.Version != s.version) {
			return nil
		}
		// A read fixes a version an Unknown write left open.
		return []any{regState{value: s.value, version: out.out.Version}}
	}
	if out.unknown {
		// porcupine's way with an indeterminate write: it returns at the
		// end of the history and its output is accepted whether or not
		// it took effect.
		if !s.matches(in.Expect) {
			return []any{s}
		}
		return []any{s, regState{value: in.Value, versionUnknown: true}}
	}
	if !s.matches(in.Expect) {
		return nil
	}
	if out.out.Version == 0 {
		return []any{regState{value: in.Value, versionUnknown: true}}
	}
	return []any{regState{value: in.Value, version: out.out.Version}}
}

func describeRegOp(input, output any) string {
	in, out := input.(RegisterInput), output.(regOutput)
	if !in.Write {
		return fmt.Sprintf("read(%s) → %q@%d", in.Key, out.out.Value, out.out.Version)
	}
	result := fmt.Sprintf("@%d", out.out.Version)
	if out.unknown {
		result = "unknown"
	}
	return fmt.Sprintf("write(%s, %q, if @%d) → %s", in.Key, in.Value, in.Expect, result)
}

func describeRegState(state any) string {
	s := state.(regState)
	switch {
	case s.versionUnknown:
		return fmt.Sprintf("%q@?", s.value)
	case s.version == 0:
		return "absent"
	}
	return fmt.Sprintf("%q@%d", s.value, s.version)
}

// registerModel returns the porcupine model of versioned registers, one
// partition per key in the order of keys.
func registerModel(keys []string) porcupine.Model {
	nd := porcupine.NondeterministicModel{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			byKey := map[string][]porcupine.Operation{}
			for _, op := range history {
				k := op.Input.(RegisterInput).Key
				byKey[k] = append(byKey[k], op)
			}
			parts := make([][]porcupine.Operation, 0, len(keys))
			for _, k := range keys {
				parts = append(parts, byKey[k])
			}
			return parts
		},
		Init:              func() []any { return []any{regState{}} },
		Step:              regStep,
		DescribeOperation: describeRegOp,
		DescribeState:     describeRegState,
	}
	return nd.ToModel()
}

// registerOps turns recorded register operations into porcupine's, and
// returns the keys they touch, sorted. Refused operations are dropped (they
// changed nothing), as are reads that did not answer (they changed nothing
// and saw nothing). A write that did not answer returns after everything
// else, so it may take effect at any point after it was sent.
func registerOps(ops []Op) ([]porcupine.Operation, []string) {
	var end int64
	for _, op := range ops {
		end = max(end, op.Invoke, op.Return)
	}
	var out []porcupine.Operation
	seen := map[string]bool{}
	var keys []string
	for _, op := range ops {
		in, ok := op.Input.(RegisterInput)
		if !ok || op.Outcome == Refused || (op.Outcome == Unknown && !in.Write) {
			continue
		}
		pop := porcupine.Operation{ClientId: op.Client, Input: in, Call: op.Invoke, Return: op.Return}
		switch op.Outcome {
		case OK:
			o, _ := op.Output.(RegisterOutput)
			pop.Output = regOutput{out: o}
		default:
			pop.Output = regOutput{unknown: true}
			pop.Return = end + 1
		}
		out = append(out, pop)
		if !seen[in.Key] {
			seen[in.Key] = true
			keys = append(keys, in.Key)
		}
	}
	slices.Sort(keys)
	return out, keys
}

// CheckRegisters checks that the register operations in ops (those whose
// Input is a RegisterInput; others are ignored) are linearizable. When they
// are not, or the check ran out of time, it writes the history and
// porcupine's visualization into opts.Dir. The error is about writing
// that evidence, never about the history.
func CheckRegisters(ops []Op, opts Options) (Result, error) {
	pops, keys := registerOps(ops)
	model := registerModel(keys)
	verdict, info := porcupine.CheckOperationsVerbose(model, pops, opts.timeout())
	res := Result{Label: opts.Label, Workload: RegisterWorkload}
	switch verdict {
	case porcupine.Ok:
		res.Verdict = Linearizable
		return res, nil
	case porcupine.Illegal:
		res.Verdict = Violation
		res.Problems = illegalKeys(keys, model.Partition(pops), info)
	default:
		res.Verdict = Inconclusive
		res.Problems = []string{fmt.Sprintf("the linearizability search did not finish within %s", opts.timeout())}
	}
	if err := writeHistory(opts, &res, ops, nil); err != nil {
		return res, err
	}
	if opts.Dir != "" {
		path := evidencePath(opts.Dir, opts.Label, RegisterWorkload, "html")
		if err := porcupine.VisualizePath(model, info, path); err != nil {
			return res, fmt.Errorf("linearcheck: write visualization: %w", err)
		}
		res.VisualizationFile = path
	}
	return res, nil
}

// illegalKeys names the keys whose longest linearizable prefix leaves
// operations out: those are the registers a client saw misbehave.
func illegalKeys(keys []string, parts [][]porcupine.Operation, info porcupine.LinearizationInfo) []string {
	var problems []string
	for i, partials := range info.PartialLinearizations() {
		longest := 0
		for _, p := range partials {
			longest = max(longest, len(p))
		}
		if longest < len(parts[i]) {
			problems = append(problems, fmt.Sprintf(
				"key %q is not linearizable: only %d of its %d operations can be ordered (see the visualization)",
				keys[i], longest, len(parts[i])))
		}
	}
	return problems
}
