package integration

// A manager whose disk lost raft entries it had acknowledged (a WAL
// cut inside a record that was synced and acknowledged) must never
// rejoin as if it held them (docs/adr/0020-lost-acknowledged-entries.md).

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"

	"github.com/jaco-project/jaco/internal/datadir"
)

// TestMultihostLostAcknowledgedEntries: a follower of three managers is
// stopped and its last WAL segment cut inside its last entry record, which
// it had acknowledged to the leader. Its start cuts the torn record as a
// crash's; the leader's first heartbeat counts on the lost entry. The
// daemon exits non-zero saying it lost acknowledged entries, with the
// runbook, instead of panicking in raft (tocommit out of range); a second
// start refuses at once and changes no file; the other two go on.
func TestMultihostLostAcknowledgedEntries(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 3)
	victim := c.others(c.leader(t, c.managers))[0]
	wantWritesThrough(t, c.managers)
	c.waitConverged(t, c.managers)
	victim.stop(t)
	raftDir := datadir.Dir(victim.dir).Raft()
	cutLastEntryRecord(t, filepath.Join(raftDir, "wal"))

	victim.start(t)
	err := victim.expectExit(t, electionTimeout)
	log := victim.logSince()
	if err == nil || strings.Contains(log, "panic") || !strings.Contains(log, "lost raft entries it had acknowledged") ||
		!strings.Contains(log, "jaco node remove --force") {
		t.Fatalf("jacod %s exited with %v; want an error saying it lost acknowledged entries, with the runbook, and no panic", victim.name, err)
	}

	before := dirDigest(t, raftDir)
	r := victim.host.exec(nil, jacodBin, "--data-dir", victim.dir, "--listen-addr", victim.addr(),
		"--advertise-addr", victim.addr(), "--node-name", victim.name)
	if r.code == 0 || !strings.Contains(r.stderr, "lost raft entries it had acknowledged") {
		t.Fatalf("second start: exit %d, stderr %q; want a refusal saying it lost acknowledged entries", r.code, r.stderr)
	}
	if after := dirDigest(t, raftDir); after != before {
		t.Errorf("the refused start changed the raft dir %s", raftDir)
	}

	rest := c.others(victim)
	wantWritesThrough(t, rest)
}

// cutLastEntryRecord truncates the newest segment in walDir in the middle
// of its last entry record.
func cutLastEntryRecord(t testing.TB, walDir string) {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(walDir, "*.wal"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no wal segment in %s (%v)", walDir, err)
	}
	slices.Sort(segs)
	path := segs[len(segs)-1]
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := wal.NewDecoder(fileutil.NewFileReader(f))
	start, end := int64(-1), int64(-1)
	for {
		before := dec.LastOffset()
		var rec walpb.Record
		if dec.Decode(&rec) != nil {
			break
		}
		if rec.Type == wal.EntryType {
			start, end = before, dec.LastOffset()
		}
	}
	f.Close()
	if start < 0 {
		t.Fatalf("no entry record in %s", path)
	}
	if err := os.Truncate(path, start+(end-start)/2); err != nil {
		t.Fatal(err)
	}
}
