package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/internal/datadir"
)

// Reads a manager once answered stale (docs/adr/0018-read-consistency.md).

// TestMultihostDeposedLeaderReadsAreCurrent: a leader SIGSTOPped while the
// others elect a new leader and take a write still believes it leads when
// it resumes, and its store misses the write. `jaco node inspect` through
// it, linearizable by default, must answer with the write the cluster
// acknowledged, never the old value it holds.
func TestMultihostDeposedLeaderReadsAreCurrent(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3)
	old := c.leader(t, c.managers)
	rest := c.others(old)
	target := rest[0].name
	wantOK(t, rest[0].jaco("node", "update", "--label-add", "v=1", target))
	wantLabelEverywhere(t, c.managers, target, "v", "1")

	old.pause(t)
	eventually(t, electionTimeout, func() error {
		return rest[0].jaco("--timeout", writeTimeout.String(), "node", "update", "--label-add", "v=2", target).err()
	})
	// One read queued at the paused leader's socket, as reads were once
	// answered stale within 2 ms of its resuming, and one sent after.
	// Either way the answer must hold the acknowledged write.
	queued := make(chan result, 1)
	go func() { queued <- old.jaco("node", "inspect", target) }()
	eventually(t, 10*time.Second, func() error { return wantQueued(old) })
	old.resume(t)
	for i, r := range []result{<-queued, old.jaco("node", "inspect", target)} {
		got, err := decode[struct {
			Labels map[string]string `json:"labels"`
		}](r)
		if err != nil {
			t.Fatalf("node inspect %d through the resumed old leader: %v", i, err)
		}
		if v := got.Labels["v"]; v != "2" {
			t.Fatalf("node inspect %d through the resumed old leader shows v=%q, want the acknowledged v=2 (a stale read)", i, v)
		}
	}
	labels, err := old.nodeLabels("--consistency", "linearizable")
	if err != nil {
		t.Fatalf("node ls --consistency linearizable through the old leader: %v", err)
	}
	if v := labels[target]["v"]; v != "2" {
		t.Fatalf("node ls --consistency linearizable through the old leader shows %s with v=%q, want v=2", target, v)
	}
}

// wantQueued succeeds once a connection waits at paused d's unix socket
// for the daemon to accept it: a listening socket's Recv-Q in ss is its
// accept queue. Unix sockets belong to a network namespace, so ss runs in
// d's; jacod binds its socket in a temporary directory of its data dir
// and renames it into place, so ss knows it by that first name.
func wantQueued(d *nsDaemon) error {
	r := d.host.exec(nil, "ss", "-xlnH")
	if err := r.err(); err != nil {
		return err
	}
	for line := range strings.Lines(r.stdout) {
		f := strings.Fields(line) // u_str LISTEN Recv-Q Send-Q path ...
		if len(f) < 5 || !strings.HasPrefix(f[4], d.dir+"/") || filepath.Base(f[4]) != filepath.Base(datadir.Dir(d.dir).Socket()) {
			continue
		}
		if f[2] == "0" {
			return fmt.Errorf("no connection queued at %s's socket yet", d.name)
		}
		return nil
	}
	return fmt.Errorf("ss shows no listener of %s's socket: %q", d.name, r.stdout)
}
