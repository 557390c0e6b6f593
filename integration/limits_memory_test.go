package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rssBytes is the resident set of process pid, from /proc.
func rssBytes(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// TestLeaderMemoryUnderOversizedRequests: clients sending requests beyond
// the cluster's limits in a loop (a million replicas, a replica count
// whose copies of a large spec would fill the store, a label value over
// its bound, a thousand labels) are refused every time, and the leader's
// resident memory stays bounded: they cost it the request, never what the
// request asks for (docs/adr/0022; before the limits, one such create
// took the leader from 57 MiB to 8 GiB).
func TestLeaderMemoryUnderOversizedRequests(t *testing.T) {
	t.Parallel()
	m := startDaemon(t, "m")
	m.initQuiet()
	wantOK(t, m.jaco("node", "update", "--availability", "pause", "m"))
	// A bundle near the 1 MiB bound: 1500 replicas of it would be 1.5 GiB
	// of task specs, over the 256 MiB replicas × spec bound.
	bundle := t.TempDir()
	big := strings.Repeat("# padding that makes the spec large\n", 25_000)
	if err := os.WriteFile(filepath.Join(bundle, "launch"), []byte("#!/bin/sh\n"+big+"exec sleep 3600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	many := []string{"node", "update"}
	for i := range 1000 {
		many = append(many, "--label-add", fmt.Sprintf("k%d=v", i))
	}
	requests := [][]string{
		{"service", "create", "-d", "--name", "huge", "--replicas", "1000000", "jaco.local/none:latest"},
		{"service", "create", "-d", "--name", "fat", "--replicas", "1500", "--bundle", bundle},
		{"node", "update", "--label-add", "big=" + strings.Repeat("v", 100_000), "m"},
		append(many, "m"),
	}
	before, err := rssBytes(m.pid())
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		peak    = before
		stop    = make(chan struct{})
		sampled = make(chan struct{})
	)
	go func() {
		defer close(sampled)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if rss, err := rssBytes(m.pid()); err == nil {
					mu.Lock()
					peak = max(peak, rss)
					mu.Unlock()
				}
			}
		}
	}()
	var wg sync.WaitGroup
	failures := make(chan string, 64)
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				req := requests[(c+i)%len(requests)]
				r := m.jaco(req...)
				if r.code != 1 || !(strings.Contains(r.stderr, "limit_exceeded") || strings.Contains(r.stderr, "invalid_spec")) {
					failures <- fmt.Sprintf("%s: exit %d, %q; want a refusal", strings.Join(req[:3], " "), r.code, r.stderr)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	close(failures)
	for f := range failures {
		t.Error(f)
	}
	svcs, err := decode[[]struct{ Name string }](m.jaco("service", "ls", "--format", "json"))
	if err != nil || len(svcs) != 0 {
		t.Errorf("service ls after the refusals: %v, %v; want none", svcs, err)
	}
	const bound = 256 << 20
	t.Logf("leader RSS %d MiB before, peak %d MiB under 160 oversized requests", before>>20, peak>>20)
	if peak-before > bound {
		t.Errorf("leader RSS grew by %d MiB under refused requests, want under %d MiB", (peak-before)>>20, bound>>20)
	}
}
