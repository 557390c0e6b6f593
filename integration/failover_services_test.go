package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReplicasOutliveManagers: replicas keep running, and are not
// replaced, when the leader dies and when every manager is gone; the
// worker's agent follows the new leader, and writes after the failover
// reach it.
func TestReplicasOutliveManagers(t *testing.T) {
	t.Parallel()
	ms := formManagers(t, 3)
	for _, m := range ms {
		wantOK(t, ms[0].jaco("node", "update", "--availability", "pause", m.name))
	}
	w := startDaemon(t, "w")
	wantOK(t, w.jaco("node", "join", "--peer", ms[0].addr, "--token", ms[0].joinToken("worker")))
	out := t.TempDir()
	bundle := writeBundle(t, out, "exec sleep 3600")
	wantOK(t, ms[0].jaco("service", "create", "-d", "--name", "web", "--replicas", "2", "-e", "OUT="+out, "--bundle", bundle))
	var first map[string]replica
	eventually(t, 30*time.Second, func() (err error) { first, err = ms[0].runningReplicas("web", 2); return err })
	ids := onNode(first, "w")

	leader, rest := splitLeader(t, ms)
	t.Logf("killing the leader, %s", leader.name)
	leader.kill()
	eventually(t, 30*time.Second, func() error {
		if s, err := rest[0].tryStatus(); err != nil || s.Leader == "" {
			return fmt.Errorf("no new leader yet (%v)", err)
		}
		return nil
	})
	wantOK(t, rest[0].jaco("service", "scale", "-d", "web=3"))
	eventually(t, 45*time.Second, func() error {
		run, err := rest[0].runningReplicas("web", 3)
		if err != nil {
			return err
		}
		if now := onNode(run, "w"); !containsAll(now, ids) {
			return fmt.Errorf("replicas %v after failover, want the original %v among them", now, ids)
		}
		return nil
	})

	t.Log("every manager gone: the replicas run on")
	for _, m := range rest {
		m.stop()
	}
	sessionsBefore := strings.Count(w.log(), "dispatcher session ended")
	eventually(t, 30*time.Second, func() error {
		if strings.Count(w.log(), "dispatcher session ended") == sessionsBefore {
			return fmt.Errorf("the worker has not noticed the managers are gone")
		}
		return nil
	})
	for _, id := range ids {
		if !alive(replicaPid(out, id)) {
			t.Fatalf("replica %s died with the managers", id)
		}
	}
	for _, m := range ms {
		m.start()
	}
	eventually(t, 45*time.Second, func() error {
		run, err := ms[0].runningReplicas("web", 3)
		if err != nil {
			return err
		}
		if now := onNode(run, "w"); !containsAll(now, ids) {
			return fmt.Errorf("replicas %v after the managers returned, want the original %v among them", now, ids)
		}
		return nil
	})
}

func containsAll(have, want []string) bool {
	for _, x := range want {
		if !slices.Contains(have, x) {
			return false
		}
	}
	return true
}
