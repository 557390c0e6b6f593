package integration

import (
	"fmt"
	"testing"
	"time"
)

// TestDrainRemoveLeader: `jaco node remove` of the leader, which runs
// replicas, moves them start-first (never fewer healthy than wanted),
// hands leadership over, and leaves two managers with the voters the
// policy allows — one command.
func TestDrainRemoveLeader(t *testing.T) {
	t.Parallel()
	ms := formManagers(t, 3)
	leader, rest := splitLeader(t, ms)
	healthyService(t, leader, "web", 3)
	via := rest[0]
	_, perNode, err := via.healthyReplicas("web")
	if err != nil || perNode[leader.name] == 0 {
		t.Fatalf("web on %v (%v), want a replica on the leader %s", perNode, err, leader.name)
	}

	count := func() (int, error) { n, _, err := via.healthyReplicas("web"); return n, err }
	var r result
	fewest, samples := fewestDuring(count, func() { r = wantOK(t, via.jaco("node", "remove", leader.name)) })
	if fewest < 3 {
		t.Errorf("during the drain of the leader web had %d healthy replicas in one of %d samples, want 3", fewest, samples)
	}
	if r.stdout != fmt.Sprintf("Node %s removed.\n", leader.name) {
		t.Errorf("node remove printed %q", r.stdout)
	}
	waitVoters(t, via, 2, 1)
	eventually(t, 30*time.Second, func() error {
		n, perNode, err := via.healthyReplicas("web")
		if err == nil && (n != 3 || perNode[leader.name] != 0) {
			err = fmt.Errorf("web runs %v, want 3 off %s", perNode, leader.name)
		}
		return err
	})
	// The removed leader learns it and stops.
	eventually(t, 30*time.Second, func() error {
		if leader.running() {
			return fmt.Errorf("%s still runs after its removal", leader.name)
		}
		return nil
	})
}
