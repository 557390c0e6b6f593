package raft

import (
	"log/slog"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/encryption"
)

// Applier is the replicated state machine: the store.
type Applier interface {
	// ApplyHeld applies one committed batch; an error rejects the batch
	// whole, deterministically on every member, and is returned to its
	// proposer. The applier may hold what it applied from its readers
	// until Publish.
	ApplyHeld(index uint64, req *api.InternalRaftRequest) error
	// Publish makes every batch applied so far visible to the applier's
	// readers. The node calls it after each Ready's committed entries,
	// before it tells their proposers the outcome or counts them applied.
	Publish()
	// Freeze fixes the state as it is for a snapshot; the function it
	// returns dumps that state, objects the applier keeps encoded as
	// their bytes. Freeze is called on the Ready loop after a Publish and
	// must be cheap; the dump may run on another goroutine while later
	// batches apply.
	Freeze() func() api.FrozenStore
	// Restore replaces the state with a snapshot's, taking snap over.
	Restore(snap *api.StoreSnapshot, index uint64) error
}

// Transport carries raft messages to other members. The node keeps its
// peer list in step with the applied configuration; Send must not block,
// and is called from the Ready loop and, for a snapshot read back from
// disk, from another goroutine (snapsend.go).
type Transport interface {
	Send(msgs []raftpb.Message)
	AddPeer(raftID uint64, addr string) error
	RemovePeer(raftID uint64)
}

// Config configures a Node.
type Config struct {
	// StateDir holds wal/ and snap/.
	StateDir string
	Sealer   *encryption.Sealer
	Applier  Applier
	// Transport may be nil while this member is alone.
	Transport Transport
	Logger    *slog.Logger

	// TickInterval is raft's clock; election and heartbeat are in ticks.
	TickInterval  time.Duration
	ElectionTick  int
	HeartbeatTick int
	// SnapshotInterval is how many applied entries trigger a snapshot.
	SnapshotInterval uint64
	// LogEntriesForSlowFollowers stay in memory behind a snapshot so a
	// follower slightly behind gets entries rather than a whole snapshot.
	LogEntriesForSlowFollowers uint64
	// KeepOldSnapshots is how many snapshots to keep besides the newest.
	KeepOldSnapshots int
}

// Defaults.
const (
	DefaultTickInterval               = 100 * time.Millisecond
	DefaultElectionTick               = 10
	DefaultHeartbeatTick              = 1
	DefaultSnapshotInterval           = 10000
	DefaultLogEntriesForSlowFollowers = 500
)

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.TickInterval == 0 {
		c.TickInterval = DefaultTickInterval
	}
	if c.ElectionTick == 0 {
		c.ElectionTick = DefaultElectionTick
	}
	if c.HeartbeatTick == 0 {
		c.HeartbeatTick = DefaultHeartbeatTick
	}
	if c.SnapshotInterval == 0 {
		c.SnapshotInterval = DefaultSnapshotInterval
	}
	if c.LogEntriesForSlowFollowers == 0 {
		c.LogEntriesForSlowFollowers = DefaultLogEntriesForSlowFollowers
	}
}
