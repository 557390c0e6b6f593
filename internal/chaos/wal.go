package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/datadir"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// lostAcknowledged is what jacod says when its log lost entries it had
// acknowledged (manager/state/raft/lost.go): it must then stay out.
const lostAcknowledged = "lost raft entries it had acknowledged"

// tornWALLimit bounds how long a restarted member with a torn log takes
// to either catch up or refuse.
const tornWALLimit = 30 * time.Second

// tearLastRecord cuts the newest WAL segment in walDir in the middle of
// its last record, as a crash while writing it could leave it. The file
// is truncated there, so etcd's reader meets the end of the file inside
// the record, which is how it tells a torn tail from damage; zeroing the
// record's second half instead would read as damage unless a whole
// 512-byte sector of it were zero.
func tearLastRecord(walDir string) (string, error) {
	segs, err := filepath.Glob(filepath.Join(walDir, "*.wal"))
	if err != nil || len(segs) == 0 {
		return "", fmt.Errorf("no wal segment in %s (%v)", walDir, err)
	}
	slices.Sort(segs)
	path := segs[len(segs)-1]
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	dec := wal.NewDecoder(fileutil.NewFileReader(f))
	start, end, typ := int64(-1), int64(-1), int64(0)
	for {
		before := dec.LastOffset()
		var rec walpb.Record
		if dec.Decode(&rec) != nil {
			break
		}
		start, end, typ = before, dec.LastOffset(), rec.Type
	}
	if start < 0 {
		return "", fmt.Errorf("no record in %s", path)
	}
	if err := f.Truncate(start + (end-start)/2); err != nil {
		return "", fmt.Errorf("tear %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s record at %d of %s", recordType(typ), start, filepath.Base(path)), nil
}

func recordType(t int64) string {
	switch t {
	case wal.EntryType:
		return "entry"
	case wal.StateType:
		return "state"
	case wal.CrcType:
		return "crc"
	case wal.SnapshotType:
		return "snapshot"
	case wal.MetadataType:
		return "metadata"
	}
	return fmt.Sprint("type ", t)
}

// tornWALFollower SIGKILLs a follower under load and tears the last record
// of its log, as a crash mid-write would. Restarted, it must either cut
// the torn record and catch up (the record was never acknowledged), or
// refuse to take part because the leader counted on it, saying so
// (never panic, never vote with a log short of what it acknowledged). A
// member that refuses is taken through its runbook: removed, its data
// dir wiped, joined afresh.
func tornWALFollower(ctx context.Context, c *cluster, rng *rand.Rand) (fault, error) {
	l, err := c.leader(ctx)
	if err != nil {
		return fault{}, err
	}
	i := followers(c, l, rng)[0]
	m := c.members[i]
	f, err := kill(c, i)
	if err != nil {
		return fault{}, err
	}
	torn, err := tearLastRecord(filepath.Join(datadir.Dir(m.dir).Raft(), "wal"))
	if err != nil {
		return fault{}, err
	}
	f.what += ", tear its " + torn
	outcome := ""
	f.heal = func(ctx context.Context) error {
		var err error
		outcome, err = c.restartTorn(ctx, i, l)
		return err
	}
	f.after = func() string { return "; " + outcome }
	return f, nil
}

// restartTorn starts member i on its torn log and waits until it serves a
// linearizable read or refuses; a refusal is followed by the runbook,
// through member via. It returns what happened.
func (c *cluster) restartTorn(ctx context.Context, i, via int) (string, error) {
	m := c.members[i]
	startErr := m.startMayExit(ctx)
	err := waitfor.Until(ctx, tornWALLimit, waitPoll, func(context.Context) error {
		if !m.running() {
			return nil
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := api.NewControlServiceClient(c.conns[i]).ListNodes(rctx, &api.ListNodesRequest{
			PageSize: 1, Consistency: api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE})
		return err
	})
	log := m.logSince()
	if strings.Contains(log, "panic") {
		return "", fmt.Errorf("%s panicked on its torn log (log %s)", m.name, m.logPath)
	}
	if m.running() {
		if err != nil {
			return "", fmt.Errorf("%s neither caught up nor refused its torn log: %w", m.name, err)
		}
		m.expectUp()
		return m.name + " cut the torn record and caught up", nil
	}
	if !strings.Contains(log, lostAcknowledged) {
		return "", fmt.Errorf("%s exited on its torn log without saying it lost acknowledged entries (start: %v; log %s)", m.name, startErr, m.logPath)
	}
	if err := c.rejoin(ctx, i, via); err != nil {
		return "", fmt.Errorf("runbook for %s: %w", m.name, err)
	}
	return m.name + " refused its log (lost acknowledged entries); removed, wiped and joined afresh", nil
}
