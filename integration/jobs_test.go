package integration

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHookReplicatedJob: a replicated job of 5 completions, at most 2 at
// once (docs/adr/0060-jobs.md), on real daemons. Each replica records
// when its launch began and ended; all 5 complete, no more than 2 ever
// overlap, `service create` waits for the job to complete, and `service
// ps` and `service ls` show the completions.
func TestHookReplicatedJob(t *testing.T) {
	t.Parallel()
	m, _, _ := hookCluster(t)
	out := t.TempDir()
	bundle := writeBundle(t, out, `s=$(date +%s%N)
sleep 0.4
echo "$s $(date +%s%N)" > "$OUT/times.$JACO_REPLICA_ID"`)
	create := wantOK(t, m.jaco("service", "create", "--name", "batch", "--mode", "replicated-job",
		"--replicas", "5", "--max-concurrent", "2", "-e", "OUT="+out, "--bundle", bundle))
	if !strings.Contains(create.stdout, "job complete") {
		t.Fatalf("service create returned before the job completed:\n%s", create.stdout)
	}
	eventually(t, 30*time.Second, func() error {
		rs, err := m.replicas("batch")
		if err != nil {
			return err
		}
		slots := map[string]bool{}
		for _, r := range rs {
			if r.State != "complete" || r.Desired != "complete" {
				return fmt.Errorf("replica %v, want complete: %+v", r, rs)
			}
			slots[r.Name] = true
		}
		if len(slots) != 5 {
			return fmt.Errorf("%d slots complete, want 5: %+v", len(slots), rs)
		}
		return nil
	})
	spans := jobSpans(t, out)
	if len(spans) != 5 {
		t.Fatalf("%d replicas ran, want 5 (one per slot, none restarted): %v", len(spans), spans)
	}
	if most := maxOverlap(spans); most > 2 {
		t.Fatalf("%d replicas ran at once, max-concurrent is 2: %v", most, spans)
	} else {
		t.Logf("at most %d replicas ran at once", most)
	}
	ls := wantOK(t, m.jaco("service", "ls"))
	if !strings.Contains(ls.stdout, "(5/5 completed)") {
		t.Fatalf("service ls does not show the job's completions:\n%s", ls.stdout)
	}
}

// span is when one replica's launch ran, in nanoseconds since the epoch.
type span struct{ start, end int64 }

// jobSpans reads what each replica recorded under out.
func jobSpans(t *testing.T, out string) []span {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(out, "times.*"))
	if err != nil {
		t.Fatal(err)
	}
	var spans []span
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fields := strings.Fields(string(data))
		if len(fields) != 2 {
			t.Fatalf("%s: %q, want START END", f, data)
		}
		s, err1 := strconv.ParseInt(fields[0], 10, 64)
		e, err2 := strconv.ParseInt(fields[1], 10, 64)
		if err1 != nil || err2 != nil || e < s {
			t.Fatalf("%s: %q is not a span", f, data)
		}
		spans = append(spans, span{s, e})
	}
	return spans
}

// maxOverlap is the most spans running at one instant.
func maxOverlap(spans []span) int {
	type edge struct {
		at    int64
		delta int
	}
	var edges []edge
	for _, s := range spans {
		edges = append(edges, edge{s.start, 1}, edge{s.end, -1})
	}
	// An end before a start at the same instant: touching is no overlap.
	slices.SortFunc(edges, func(a, b edge) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta))
	})
	most, cur := 0, 0
	for _, e := range edges {
		cur += e.delta
		most = max(most, cur)
	}
	return most
}
