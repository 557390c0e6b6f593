package integration

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

// recoverTimeout bounds how long a restarted daemon may take to replay its
// raft state and lead again.
const recoverTimeout = 20 * time.Second

// TestCrashSafety SIGKILLs an initialized daemon, with no chance to flush
// or close anything, and restarts it on the same data dir: the cluster,
// node and raft identities must come back unchanged and the operator token
// shown once at init must still open the TCP API (its hash was persisted).
// Several cycles, because a restart writes state a later crash must keep.
//
// A restart rebuilds the state from the WAL alone, or from a snapshot plus
// the WAL after it; both must hold everything.
func TestCrashSafety(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"wal", nil},
		{"snapshot", []string{"--snapshot-interval", "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			crashAndRecover(t, startDaemon(t, "crashy", tc.flags...))
		})
	}
}

func crashAndRecover(t testing.TB, d *daemon) {
	token := d.initQuiet()
	want := d.status()
	wantNodes, err := d.tryNodes()
	if err != nil {
		t.Fatal(err)
	}

	for cycle := 1; cycle <= 3; cycle++ {
		d.kill()
		d.restart()
		eventually(t, recoverTimeout, func() error {
			got, err := d.tryStatus()
			if err != nil {
				return err
			}
			// A restart elects again: the term must rise, all else stay.
			if got.RaftTerm <= want.RaftTerm {
				return fmt.Errorf("cycle %d: raft term %d, want above %d (a restart elects again)", cycle, got.RaftTerm, want.RaftTerm)
			}
			want.RaftTerm = got.RaftTerm
			if !reflect.DeepEqual(got, want) {
				return fmt.Errorf("cycle %d: status %+v, want %+v", cycle, got, want)
			}
			return nil
		})
		nodes, err := d.tryNodes()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(nodes, wantNodes) {
			t.Fatalf("cycle %d: node ls %+v, want %+v", cycle, nodes, wantNodes)
		}
		tcpNodes, err := decode[[]nodeEntry](d.jacoTCP(token, "node", "ls", "--format", "json"))
		if err != nil {
			t.Fatalf("cycle %d: the operator token no longer works over TCP: %v", cycle, err)
		}
		if !reflect.DeepEqual(tcpNodes, wantNodes) {
			t.Fatalf("cycle %d: node ls over TCP %+v, want %+v", cycle, tcpNodes, wantNodes)
		}
	}
}
