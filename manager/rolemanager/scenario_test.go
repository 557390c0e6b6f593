package rolemanager

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/manager/voterset"
)

var update = flag.Bool("update", false, "rewrite the expected output in testdata/*.txt")

// TestScenarios runs the voter-policy scripts in testdata/*.txt, in the
// manner of etcd-io/raft's datadriven interaction tests.
//
// A script is a list of commands, one a line; '#' starts a comment line.
// A command that prints something is followed by a line "----", the
// expected output, and a blank line. Durations are Go durations.
//
//	promote-after <dur>      the settle window (default 3s)
//	now <dur> | now +<dur>   set or advance the clock (starts at 0s)
//	member <node> [voter|learner] [caught-up|behind] [since=<dur>] [raft=<n>]
//	                         add a member (default: a caught-up learner seen
//	                         now, with the next free raft id) or change the
//	                         given fields of an existing one
//	unknown raft=<n> voter|learner
//	                         a configuration member without a node id
//	remove <node> | remove raft=<n>
//	leader <node>            the leader (any member; default none)
//	decide [why]             print Decide's verdict: "promote b", "demote e"
//	                         or "none" (with why: ": " and the reason)
//	step [why]               decide and apply the decision
//	settle                   step until none; print each change and status
//	status                   print voters, nonvoters and the target
//
// Every decision is also taken on reordered copies of the members and must
// not change. Run with -update to rewrite the expected output.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenarios in testdata")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			runScript(t, file)
		})
	}
}

// directive is one command of a script with its expected output; a
// comment or blank line is a directive without a command.
type directive struct {
	line int
	text string   // the command, or the comment/blank line kept verbatim
	cmd  bool     // text is a command
	want []string // expected output lines
}

func parseScript(t *testing.T, file string) []directive {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var ds []directive
	for i := 0; i < len(lines); i++ {
		text := strings.TrimRight(lines[i], " \t")
		if text == "" || strings.HasPrefix(text, "#") {
			ds = append(ds, directive{line: i + 1, text: text})
			continue
		}
		if text == "----" {
			t.Fatalf("%s:%d: ---- without a command", file, i+1)
		}
		d := directive{line: i + 1, text: text, cmd: true}
		if i+1 < len(lines) && strings.TrimSpace(lines[i+1]) == "----" {
			i += 2
			for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
				d.want = append(d.want, strings.TrimRight(lines[i], " \t"))
			}
			// The blank line ending the block belongs to it.
		}
		ds = append(ds, d)
	}
	return ds
}

func runScript(t *testing.T, file string) {
	ds := parseScript(t, file)
	env := newScenario()
	var rewritten []string
	failed := false
	for _, d := range ds {
		if !d.cmd {
			rewritten = append(rewritten, d.text)
			continue
		}
		got, err := env.run(d.text)
		if err != nil {
			t.Fatalf("%s:%d: %s: %v", file, d.line, d.text, err)
		}
		rewritten = append(rewritten, d.text)
		if len(got) > 0 {
			rewritten = append(rewritten, "----")
			rewritten = append(rewritten, got...)
			rewritten = append(rewritten, "")
		}
		if !*update && !slices.Equal(got, d.want) {
			failed = true
			t.Errorf("%s:%d: %s\n--- want\n%s\n--- got\n%s", file, d.line, d.text,
				strings.Join(d.want, "\n"), strings.Join(got, "\n"))
		}
	}
	if failed {
		t.Log("if the new output is right, rerun with -update")
	}
	if *update {
		// Drop the blank line that followed a block and was kept too.
		out := rewritten[:0]
		for i, l := range rewritten {
			if l == "" && i > 0 && rewritten[i-1] == "" {
				continue
			}
			out = append(out, l)
		}
		if err := os.WriteFile(file, []byte(strings.TrimRight(strings.Join(out, "\n"), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// scenario is the state a script drives: members in declaration order.
type scenario struct {
	members      []Member
	leader       uint64
	now          time.Time
	promoteAfter time.Duration
}

func newScenario() *scenario {
	return &scenario{now: epoch, promoteAfter: DefaultPromoteAfter}
}

func (s *scenario) run(line string) ([]string, error) {
	fields := strings.Fields(line)
	cmd, args := fields[0], fields[1:]
	switch cmd {
	case "promote-after":
		if len(args) != 1 {
			return nil, fmt.Errorf("want promote-after <dur>")
		}
		d, err := time.ParseDuration(args[0])
		s.promoteAfter = d
		return nil, err
	case "now":
		if len(args) != 1 {
			return nil, fmt.Errorf("want now <dur> or now +<dur>")
		}
		rel, ok := strings.CutPrefix(args[0], "+")
		d, err := time.ParseDuration(rel)
		if err != nil {
			return nil, err
		}
		if ok {
			s.now = s.now.Add(d)
		} else {
			s.now = epoch.Add(d)
		}
		return nil, nil
	case "member", "unknown":
		return nil, s.member(cmd == "unknown", args)
	case "remove":
		if len(args) != 1 {
			return nil, fmt.Errorf("want remove <node> or remove raft=<n>")
		}
		i, err := s.find(args[0])
		if err != nil {
			return nil, err
		}
		s.members = slices.Delete(s.members, i, i+1)
		return nil, nil
	case "leader":
		if len(args) != 1 {
			return nil, fmt.Errorf("want leader <node>")
		}
		i, err := s.find(args[0])
		if err != nil {
			return nil, err
		}
		s.leader = s.members[i].RaftID
		return nil, nil
	case "decide", "step":
		why := len(args) == 1 && args[0] == "why"
		if len(args) > 1 || len(args) == 1 && !why {
			return nil, fmt.Errorf("want %s [why]", cmd)
		}
		d, err := s.decide()
		if err != nil {
			return nil, err
		}
		if cmd == "step" {
			s.apply(d)
		}
		return []string{s.format(d, why)}, nil
	case "settle":
		var out []string
		for range 3*len(s.members) + 3 {
			d, err := s.decide()
			if err != nil {
				return nil, err
			}
			if d.Action == NoAction {
				return append(out, s.status()), nil
			}
			s.apply(d)
			out = append(out, s.format(d, false))
		}
		return nil, fmt.Errorf("did not settle: %s", strings.Join(out, "; "))
	case "status":
		return []string{s.status()}, nil
	default:
		return nil, fmt.Errorf("unknown command %q", cmd)
	}
}

func (s *scenario) member(unknown bool, args []string) error {
	var m *Member
	var name string
	if unknown {
		m = &Member{InConfigSince: s.now, CaughtUp: true}
	} else {
		if len(args) == 0 {
			return fmt.Errorf("want member <node> [options]")
		}
		name, args = args[0], args[1:]
		if i, err := s.find(name); err == nil {
			m = &s.members[i]
		} else {
			m = &Member{NodeID: name, CaughtUp: true, InConfigSince: s.now}
		}
	}
	isNew := m.RaftID == 0
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		switch k {
		case "voter":
			m.Voter = true
		case "learner":
			m.Voter = false
		case "caught-up":
			m.CaughtUp = true
		case "behind":
			m.CaughtUp = false
		case "since":
			d, err := time.ParseDuration(v)
			if err != nil {
				return err
			}
			m.InConfigSince = epoch.Add(d)
		case "raft":
			if !isNew {
				return fmt.Errorf("the raft id of %s is fixed", name)
			}
			id, err := strconv.ParseUint(v, 10, 64)
			if err != nil || id == 0 {
				return fmt.Errorf("bad raft id %q", v)
			}
			if _, err := s.find(a); err == nil {
				return fmt.Errorf("raft id %d is taken", id)
			}
			m.RaftID = id
		default:
			return fmt.Errorf("unknown option %q", a)
		}
	}
	if !isNew {
		return nil
	}
	if m.RaftID == 0 {
		if unknown {
			return fmt.Errorf("an unknown member needs raft=<n>")
		}
		for id := uint64(1); ; id++ {
			if _, err := s.find("raft=" + strconv.FormatUint(id, 10)); err != nil {
				m.RaftID = id
				break
			}
		}
	}
	s.members = append(s.members, *m)
	return nil
}

// find returns the index of the member named by a node id or "raft=<n>".
func (s *scenario) find(ref string) (int, error) {
	if v, ok := strings.CutPrefix(ref, "raft="); ok {
		id, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, err
		}
		if i := slices.IndexFunc(s.members, func(m Member) bool { return m.RaftID == id }); i >= 0 {
			return i, nil
		}
		return 0, fmt.Errorf("no member with raft id %d", id)
	}
	if i := slices.IndexFunc(s.members, func(m Member) bool { return m.NodeID == ref }); i >= 0 {
		return i, nil
	}
	return 0, fmt.Errorf("no member %q", ref)
}

// decide runs Decide on the members as declared and on reordered copies,
// which must agree.
func (s *scenario) decide() (Decision, error) {
	d := Decide(slices.Clone(s.members), s.leader, s.now, s.promoteAfter)
	rng := rand.New(rand.NewPCG(uint64(len(s.members)), 1))
	for i := range 6 {
		ms := slices.Clone(s.members)
		if i == 0 {
			slices.Reverse(ms)
		} else {
			rng.Shuffle(len(ms), func(a, b int) { ms[a], ms[b] = ms[b], ms[a] })
		}
		if other := Decide(ms, s.leader, s.now, s.promoteAfter); other != d {
			return d, fmt.Errorf("Decide depends on input order: %+v, then %+v", d, other)
		}
	}
	return d, nil
}

func (s *scenario) apply(d Decision) {
	if d.Action == NoAction {
		return
	}
	i := slices.IndexFunc(s.members, func(m Member) bool { return m.RaftID == d.RaftID })
	s.members[i].Voter = d.Action == Promote
}

func (s *scenario) format(d Decision, why bool) string {
	out := d.Action.String()
	if d.Action != NoAction {
		out += " " + d.NodeID
	}
	if why {
		out += ": " + d.Reason
	}
	return out
}

// status reads e.g. "voters a b c; nonvoters d; target 3 of 4".
func (s *scenario) status() string {
	var voters, learners []string
	managers := 0
	for _, m := range s.members {
		name := m.NodeID
		if name == "" {
			name = fmt.Sprintf("?%d", m.RaftID)
		}
		if m.Voter {
			voters = append(voters, name)
		} else {
			learners = append(learners, name)
		}
		if m.Voter || m.NodeID != "" {
			managers++
		}
	}
	slices.Sort(voters)
	slices.Sort(learners)
	list := func(names []string) string {
		if len(names) == 0 {
			return "-"
		}
		return strings.Join(names, " ")
	}
	return fmt.Sprintf("voters %s; nonvoters %s; target %d of %d", list(voters), list(learners),
		voterset.TargetVoters(managers), managers)
}
