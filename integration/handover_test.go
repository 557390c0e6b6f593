package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStoppingLeaderHandsOver: a leader stopped with SIGTERM hands
// leadership to a follower before it stops, says so in its log, and the
// others go on writing under the leader it chose.
func TestStoppingLeaderHandsOver(t *testing.T) {
	t.Parallel()
	ds := formManagers(t, 3)
	st := ds[0].status()
	var leader *daemon
	var rest []*daemon
	for _, d := range ds {
		if s := d.status(); s.NodeID == st.Leader {
			leader = d
		} else {
			rest = append(rest, d)
		}
	}
	if leader == nil {
		t.Fatalf("no daemon is the leader %s", st.Leader)
	}
	began := time.Now()
	leader.stop()
	stopped := time.Since(began)
	if !strings.Contains(leader.log(), "leadership handed over before stopping") {
		t.Fatalf("the stopped leader did not hand leadership over; its log:\n%s", leader.log())
	}
	eventually(t, 10*time.Second, func() error {
		s, err := rest[0].tryStatus()
		if err != nil {
			return err
		}
		if s.Leader == "" || s.Leader == st.Leader {
			return fmt.Errorf("leader %q", s.Leader)
		}
		return nil
	})
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantOK(t, rest[1].jaco("secret", "create", "after-handover", file))
	t.Logf("the leader stopped %s after SIGTERM", stopped)
}
