package integration

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"
)

// TestRebalanceEvensOutAfterANodeReturns: three workers run 1/1/1; one is
// drained (its replica moves) and made active again, which moves nothing
// back; `jaco service rebalance` then moves the one replica needed, with
// never fewer than three running replicas (start-first), and ends 1/1/1.
// With rebalance_on_join on, a node's return rebalances by itself.
func TestRebalanceEvensOutAfterANodeReturns(t *testing.T) {
	t.Parallel()
	m, _, _ := hookCluster(t)
	w3 := startDaemon(t, "w3")
	wantOK(t, w3.jaco("node", "join", "--peer", m.addr, "--token", m.joinToken("worker")))
	waitReady(t, m, "w3")
	healthyService(t, m, "web", 3, "--update-order", "start-first", "--update-monitor", "1s")
	spread := func(want map[string]int) func() error {
		return func() error {
			n, per, err := m.healthyReplicas("web")
			if err != nil {
				return err
			}
			if n != 3 || !maps.Equal(per, want) {
				return fmt.Errorf("web runs %v, want %v", per, want)
			}
			return nil
		}
	}
	eventually(t, 30*time.Second, spread(map[string]int{"w1": 1, "w2": 1, "w3": 1}))

	wantOK(t, m.jaco("node", "update", "--availability", "drain", "w3"))
	eventually(t, 30*time.Second, func() error {
		n, per, err := m.healthyReplicas("web")
		if err == nil && (n != 3 || per["w3"] != 0) {
			err = fmt.Errorf("web runs %v, want 3 off w3", per)
		}
		return err
	})
	wantOK(t, m.jaco("node", "update", "--availability", "active", "w3"))

	var fewestSeen string
	count := func() (int, error) {
		n, per, err := m.healthyReplicas("web")
		if err == nil && n < 3 && fewestSeen == "" {
			fewestSeen = fmt.Sprint(per)
		}
		return n, err
	}
	var r result
	fewest, samples := fewestDuring(count, func() { r = wantOK(t, m.jaco("service", "rebalance", "web")) })
	if fewest < 3 {
		t.Errorf("during the rebalance web had only %d running replicas (%s) in one of %d samples", fewest, fewestSeen, samples)
	}
	t.Logf("%d samples during the rebalance; it printed:\n%s", samples, r.stdout)
	if !strings.Contains(r.stdout, "web: balanced: moved 1 replica\n") {
		t.Errorf("service rebalance did not report one replica moved:\n%s%s", r.stdout, r.stderr)
	}
	if err := spread(map[string]int{"w1": 1, "w2": 1, "w3": 1})(); err != nil {
		t.Fatalf("after the rebalance: %v", err)
	}

	// Balanced already: nothing moves.
	if r := wantOK(t, m.jaco("service", "rebalance", "--all")); !strings.Contains(r.stdout, "web: balanced already") {
		t.Errorf("rebalance --all of a balanced cluster printed:\n%s", r.stdout)
	}

	wantOK(t, m.jaco("cluster", "update", "--rebalance-on-join=true"))
	wantOK(t, m.jaco("node", "update", "--availability", "drain", "w1"))
	eventually(t, 30*time.Second, func() error {
		n, per, err := m.healthyReplicas("web")
		if err == nil && (n != 3 || per["w1"] != 0) {
			err = fmt.Errorf("web runs %v, want 3 off w1", per)
		}
		return err
	})
	wantOK(t, m.jaco("node", "update", "--availability", "active", "w1"))
	eventually(t, 30*time.Second, spread(map[string]int{"w1": 1, "w2": 1, "w3": 1}))
}
