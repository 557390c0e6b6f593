package chaos

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/internal/linearcheck"
)

func TestLongestGap(t *testing.T) {
	s := time.Second
	acked := []time.Duration{1 * s, 2 * s, 6 * s, 7 * s, 12 * s}
	for _, tc := range []struct {
		from, to, want time.Duration
	}{
		{0, 8 * s, 4 * s},         // 2 s to 6 s
		{3 * s, 8 * s, 3 * s},     // from the injection to the first write
		{7 * s, 11 * s, 4 * s},    // no write after 7 s until the end
		{8 * s, 10 * s, 2 * s},    // no write at all
		{0, 13 * s, 5 * s},        // 7 s to 12 s
		{12 * s, 12 * s, 0},       // an empty window
		{6 * s, 6*s + s/2, s / 2}, // a write exactly at the start
	} {
		if got := longestGap(acked, tc.from, tc.to); got != tc.want {
			t.Errorf("longestGap(%v, %v) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

func TestUnavailabilityCountsOnlyAcknowledgedWrites(t *testing.T) {
	s := int64(time.Second)
	ops := []linearcheck.Op{
		{Input: linearcheck.SetAdd{Element: "a"}, Return: 1 * s, Outcome: linearcheck.OK},
		{Input: linearcheck.RegisterInput{Key: "k", Write: true}, Return: 3 * s, Outcome: linearcheck.OK},
		// Neither a read, nor a refused or unknown write shows the
		// cluster taking writes.
		{Input: linearcheck.RegisterInput{Key: "k"}, Return: 4 * s, Outcome: linearcheck.OK},
		{Input: linearcheck.SetAdd{Element: "b"}, Return: 5 * s, Outcome: linearcheck.Refused},
		{Input: linearcheck.SetAdd{Element: "c"}, Return: 6 * s, Outcome: linearcheck.Unknown},
		{Input: linearcheck.SetAdd{Element: "d"}, Return: 9 * s, Outcome: linearcheck.OK},
	}
	r := &Report{Events: []Event{{Inject: 0}, {Inject: 8 * time.Second}}}
	r.unavailability(ops, 10*time.Second)
	if got, want := r.Events[0].Unavailable, 5*time.Second; got != want {
		t.Errorf("first episode: writes stopped %v, want %v (3 s to 8 s)", got, want)
	}
	if got, want := r.Events[1].Unavailable, time.Second; got != want {
		t.Errorf("second episode: writes stopped %v, want %v", got, want)
	}
	if p50, longest := r.Unavailability(); p50 != time.Second || longest != 5*time.Second {
		t.Errorf("Unavailability() = %v, %v; want 1s, 5s", p50, longest)
	}
}

func TestReportFailed(t *testing.T) {
	ok := []WorkloadStats{
		{Workload: linearcheck.RegisterWorkload, Result: linearcheck.Result{Verdict: linearcheck.Linearizable}},
		{Workload: linearcheck.SetWorkload, Result: linearcheck.Result{Verdict: linearcheck.Linearizable}},
	}
	if (&Report{Workloads: ok}).Failed() {
		t.Error("a run with both checks ok failed")
	}
	if !(&Report{}).Failed() {
		t.Error("a run that checked nothing passed")
	}
	if !(&Report{Workloads: ok, Problems: []string{"jacod m2 exited by itself"}}).Failed() {
		t.Error("a run with a crashed daemon passed")
	}
	for _, v := range []linearcheck.Verdict{linearcheck.Violation, linearcheck.Inconclusive} {
		bad := append([]WorkloadStats(nil), ok...)
		bad[1].Result.Verdict = v
		r := &Report{Seed: 7, Nemesis: "kill-leader", Workloads: bad,
			Events: []Event{{Episode: 1, Nemesis: "kill-leader", What: "SIGKILL m1"}}}
		if !r.Failed() {
			t.Errorf("a run whose set check is %s passed", v)
		}
		// What a failure prints must replay the run: seed, nemesis and
		// schedule.
		for _, want := range []string{"seed=7", "nemesis=kill-leader", "SIGKILL m1", "FAILED"} {
			if !strings.Contains(r.String(), want) {
				t.Errorf("report %q does not say %q", r, want)
			}
		}
	}
}

func TestPicker(t *testing.T) {
	if _, err := picker("no-such-nemesis"); err == nil {
		t.Error("an unknown nemesis name was accepted")
	}
	for _, name := range NemesisNames() {
		pick, err := picker(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := pick(rand.New(rand.NewPCG(1, 0))).Name; got != name {
			t.Errorf("picker(%s) picked %s", name, got)
		}
	}
	// Random picks from the seed: the same seed, the same schedule.
	pick, err := picker(Random)
	if err != nil {
		t.Fatal(err)
	}
	var a, b []string
	r1, r2 := rand.New(rand.NewPCG(42, 0)), rand.New(rand.NewPCG(42, 0))
	seen := map[string]bool{}
	for range 200 {
		n := pick(r1).Name
		a, b = append(a, n), append(b, pick(r2).Name)
		seen[n] = true
	}
	if strings.Join(a, ",") != strings.Join(b, ",") {
		t.Error("the same seed picked different nemeses")
	}
	if len(seen) != len(Nemeses) {
		t.Errorf("200 random picks chose %d of %d nemeses", len(seen), len(Nemeses))
	}
}

func TestWriteResults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.md")
	reports := []*Report{
		{Seed: 9, Nemesis: "pause-leader", Managers: 5, Events: []Event{{Unavailable: 3 * time.Second}}, Workloads: []WorkloadStats{
			{Workload: linearcheck.RegisterWorkload, Ops: 100, OK: 80, Refused: 15, Unknown: 5,
				Result: linearcheck.Result{Verdict: linearcheck.Linearizable}},
			{Workload: linearcheck.SetWorkload, Ops: 50, OK: 48, Refused: 1, Unknown: 1, Lost: 1,
				Result: linearcheck.Result{Verdict: linearcheck.Violation, Problems: []string{`lost: acknowledged add "x"`}}},
		}},
	}
	if err := WriteResults(path, reports, time.Minute); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| pause-leader | 5 | 9 | registers | 1 | 100 | 80 | 15 | 5 | 0 | – | 3s | 3s |",
		"| pause-leader | 5 | 9 | set | 1 | 50 | 48 | 1 | 1 | 1 | 1 | 3s | 3s |",
		"## pause-leader (seed 9): failed",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("results do not hold %q:\n%s", want, b)
		}
	}
}
