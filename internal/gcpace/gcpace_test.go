package gcpace

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name                  string
		live, roots, headroom uint64
		maxPercent, want      int
	}{
		{"nothing live yet", 0, 0, 256 * mib, 400, 400},
		{"small heap, capped", 16 * mib, 0, 256 * mib, 400, 400},
		{"headroom twice the live heap", 128 * mib, 0, 256 * mib, 400, 200},
		{"live heap as large as the headroom", 256 * mib, 0, 256 * mib, 400, 100},
		{"large heap keeps GOGC's default", 2048 * mib, 0, 256 * mib, 400, 100},
		// The runtime applies the percent to the roots too: 64 MiB live
		// and 64 MiB of stacks grow by 256 MiB at 200 %, not 400.
		{"stacks share the headroom", 64 * mib, 64 * mib, 256 * mib, 400, 200},
	} {
		if got := Percent(tc.live, tc.roots, tc.headroom, tc.maxPercent); got != tc.want {
			t.Errorf("%s: Percent(%d, %d, %d, %d) = %d, want %d", tc.name, tc.live, tc.roots, tc.headroom, tc.maxPercent, got, tc.want)
		}
	}
}

// TestSamplesAreTheRuntimes: the pacer reads metrics this Go has; one
// it lacks would read as zero and stretch the headroom again.
func TestSamplesAreTheRuntimes(t *testing.T) {
	have := map[string]bool{}
	for _, d := range metrics.All() {
		have[d.Name] = d.Kind == metrics.KindUint64
	}
	for _, name := range samples {
		if !have[name] {
			t.Errorf("%s: not a uint64 metric of this runtime", name)
		}
	}
}

func gogc(t *testing.T) int64 {
	t.Helper()
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// unsetGOGC runs the test as if GOGC were not in the environment, and
// puts the collector's percent back afterwards.
func unsetGOGC(t *testing.T) {
	if v, ok := os.LookupEnv("GOGC"); ok {
		os.Unsetenv("GOGC")
		t.Cleanup(func() { os.Setenv("GOGC", v) })
	}
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
}

// TestRunPacesAndRestores: with a headroom far above the live heap the
// percent goes to the cap while Run runs, and back to what it was after.
func TestRunPacesAndRestores(t *testing.T) {
	unsetGOGC(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, 1<<40, 300)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for gogc(t) != 300 {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("GOGC is %d after 5 s, want 300", gogc(t))
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if got := gogc(t); got != 100 {
		t.Fatalf("GOGC is %d after Run returned, want the 100 it found", got)
	}
}

// TestRunLeavesAnOperatorsGOGC: GOGC in the environment is the
// operator's choice, and Run changes nothing.
func TestRunLeavesAnOperatorsGOGC(t *testing.T) {
	unsetGOGC(t)
	t.Setenv("GOGC", "100")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	Run(ctx, 1<<40, 300) // returns at once, long before ctx ends
	if ctx.Err() != nil {
		t.Fatal("Run waited for its context with GOGC set")
	}
	if got := gogc(t); got != 100 {
		t.Fatalf("GOGC is %d, want the operator's 100", got)
	}
}
