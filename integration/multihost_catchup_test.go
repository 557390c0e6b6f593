package integration

// Multi-host tests of a manager that comes back after the group moved on
// without it: caught up with a snapshot once the log it needs is gone, and
// following leaders it has never heard of by resolving their addresses.

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// snapshotRestored is what go.etcd.io/raft logs (at debug level) when a
// follower installs a snapshot the leader sent it. A member restarting
// from its own snapshot does not log it.
var snapshotRestored = regexp.MustCompile(`restored snapshot \[index: \d+`)

// TestMultihostSnapshotCatchUp: a manager that was down while the others
// moved on further than the leader keeps log for (a snapshot every 5
// entries, and 500 entries kept for slow followers) is brought back with a
// snapshot, and then has everything: the join it missed and the writes.
func TestMultihostSnapshotCatchUp(t *testing.T) {
	t.Parallel()
	flags := []string{"--snapshot-interval", "5", "--log-level", "debug"}
	c := newCluster(t, 3, flags...)
	leader := c.leader(t, c.managers)
	lagging := c.others(leader)[0]
	rest := c.others(lagging)
	lagging.kill(t)

	// A join it misses, then more writes than the leader keeps behind its
	// snapshot for slow followers (raft.DefaultLogEntriesForSlowFollowers,
	// 500; jacod has no flag for it), so the log it needs is gone.
	c.addManager(t, rest[0], rest[1], flags...)
	c.waitConverged(t, c.others(lagging))
	const writes, writers = 560, 4
	var done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	start := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			through := rest[w%len(rest)]
			for done.Add(1) <= writes {
				if err := through.write(writeTimeout); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("write while %s was down: %v", lagging.name, err)
	}
	t.Logf("%d writes while %s was down took %v", writes, lagging.name, time.Since(start).Round(time.Millisecond))

	back := time.Now()
	lagging.restart(t)
	v := c.waitConverged(t, c.managers)
	t.Logf("%s caught up %v after restart", lagging.name, time.Since(back).Round(time.Millisecond))
	if !snapshotRestored.MatchString(lagging.logSince()) {
		t.Errorf("%s caught up without installing a snapshot from the leader (no %q in its log)", lagging.name, snapshotRestored)
	}
	if got, err := lagging.view(); err != nil || !slices.Equal(got.nodes, v.nodes) {
		t.Errorf("%s lists %q (%v), want %q", lagging.name, got.nodes, err, v.nodes)
	}
	wantWritesThrough(t, []*nsDaemon{lagging})
}

// TestMultihostRejoinResolveAddress: a manager that was down while two
// managers joined and became voters comes back to a cluster whose only
// possible leaders are those two, which it has never heard of. It can vote
// for them and follow them only by asking a member it knows for their
// addresses (Raft.ResolveAddress): without that the group has no quorum.
//
// m1 leads m1..m3; m3 is killed; m4 and m5 join and are promoted (five
// voters). Then m2 is cut off from m4 and m5 (it still reaches m3) and m1
// is paused: of the five voters only m3, m4 and m5 can form a majority,
// and m3 knows nobody of them but m2. After the restart of m3 a leader
// among m4 and m5 is elected, and m3 catches up and takes writes.
func TestMultihostRejoinResolveAddress(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3)
	m1 := c.leader(t, c.managers)
	others := c.others(m1)
	m2, m3 := others[0], others[1]

	m3.kill(t)
	m4 := c.addManager(t, m1, m2)
	m5 := c.addManager(t, m2, m1)
	c.waitConverged(t, []*nsDaemon{m1, m2, m4, m5}) // five voters, m3 down

	m2.host.partition(t, m4.host, m5.host)
	m1.pause(t)
	start := time.Now()
	m3.restart(t)

	newLeaders := []*nsDaemon{m4, m5}
	eventually(t, convergeTimeout, func() error {
		s, err := m3.tryStatus()
		if err != nil {
			return err
		}
		if l := c.byNodeID(s.Leader); !slices.Contains(newLeaders, l) {
			return fmt.Errorf("m3 sees leader %q, want m4 or m5", s.Leader)
		}
		return nil
	})
	t.Logf("m3 follows a leader it had never heard of %v after its restart", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(m3.logSince(), "resolved raft peer address") {
		t.Errorf("m3 never logged resolving a peer's address")
	}
	wantWritesThrough(t, []*nsDaemon{m3})
	c.waitConverged(t, []*nsDaemon{m3, m4, m5})
	v, err := m3.view()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range newLeaders {
		if !slices.ContainsFunc(v.status.Members, func(m member) bool { return m.Hostname == d.name && m.Address == d.addr() }) {
			t.Errorf("m3's status lacks %s at %s: %+v", d.name, d.addr(), v.status.Members)
		}
	}

	m1.resume(t)
	m2.host.heal(t)
	c.waitConverged(t, c.managers)
}
