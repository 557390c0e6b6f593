package raft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/manager/state/raft/storage"
)

// Errors callers branch on.
var (
	// ErrNotLeader: this member is not the leader, so it takes no writes.
	// A proposal failing with it was certainly not appended to the log:
	// retrying it is safe.
	ErrNotLeader = errors.New("this manager is not the raft leader")
	// ErrOutcomeUnknown: the proposal may be in the raft log, and this
	// member can no longer learn whether it commits (a later leader may
	// commit it). Every failure after raft may have taken the entry wraps
	// it; a blind retry could apply a write twice.
	ErrOutcomeUnknown = errors.New("the write's outcome is unknown")
	// ErrLostLeadership: leadership changed while a proposal waited.
	ErrLostLeadership = fmt.Errorf("raft leadership changed while the write waited to commit: %w", ErrOutcomeUnknown)
	// ErrStopped: the node is stopped.
	ErrStopped = errors.New("raft node stopped")
	// errStoppedWaiting: the node stopped while a proposal waited.
	errStoppedWaiting = fmt.Errorf("%w while the write waited to commit: %w", ErrStopped, ErrOutcomeUnknown)
	// ErrMemberRemoved: a message came from a raft id removed for good.
	ErrMemberRemoved = errors.New("raft member was removed from the cluster")
	// ErrRemoved: this member applied its own removal from the group.
	ErrRemoved = errors.New("this manager was removed from the raft group")
	// ErrUnknownMember: a membership change named a raft id not in the group.
	ErrUnknownMember = errors.New("no such raft member")
)

// maxSizePerMsg bounds one append message (and one Ready's committed
// entries), well under gRPC's default 4 MiB message limit.
const maxSizePerMsg = 1 << 20

// maxInflightMsgs bounds the append messages on their way to a follower.
// raft sends one per proposal while the window has room; once it is
// full, the entries proposed meanwhile go out in one message when an
// answer frees a place. Against 256, 16 cut the CPU of a write at
// 8 000 writes/s by 2-5 % and its p50 by 15-20 %, with p50 at 1 000/s
// unchanged (docs/bench/cluster.md); 16 MiB in flight still fill a
// 50 ms round trip at 300 MB/s.
const maxInflightMsgs = 16

// Node is one member of the raft group.
type Node struct {
	cfg       Config
	raftID    uint64
	nodeID    string
	clusterID string

	rn   raft.Node
	mem  *raft.MemoryStorage
	disk *storage.Storage
	wait *waitRegistry[error]
	// proposed holds what this member proposed, for its apply.
	proposed *proposed
	members  *membership
	metrics  *nodeMetrics

	// Owned by the Ready loop.
	confState     raftpb.ConfState
	snapshotIndex uint64
	// snapshotBytes is the size of the newest snapshot, logBytes the size
	// of the entries applied since it: a snapshot is due only once the log
	// behind it outweighs it (snapshot.go).
	snapshotBytes, logBytes int
	// staggerNext makes the next large snapshot wait for its offset from
	// the other voters' (snapshotDue): the newest is one they hold too,
	// taken at the same index or, when staggerFrom is set, received from
	// that leader.
	staggerNext bool
	staggerFrom uint64
	wasLeader   bool
	// term is raft's term as of the last Ready; leaderTerm the term this
	// member leads in, 0 when it does not.
	term, leaderTerm uint64
	campaigned       bool
	removedSelf      bool
	snapshotNow      bool         // snapshot at the end of this Ready, whatever the interval
	snapshotting     *snapshotJob // the snapshot being written off the loop, nil when none
	// decoded is the newest snapshot a peer sent, decoded on arrival, until
	// restoreSnapshot takes it (received.go).
	decoded atomic.Pointer[decodedSnapshot]
	// snapshotSends are the goroutines reading a snapshot from disk for a
	// follower (snapsend.go); run waits for them before closing the disk.
	snapshotSends sync.WaitGroup
	// appliedConfChanges are the conf change ids applied in this Ready,
	// whose proposers are woken once raft has been told (Advance).
	appliedConfChanges []uint64
	// held are the outcomes of this Ready's applied entries and heldIndex
	// the last one's index, until publishApplied.
	held      []heldOutcome
	heldIndex uint64
	// specs decodes the committed entries not proposed here, sharing
	// their tasks' specs; the apply's own, like held.
	specs specShare
	// applier applies a Ready's entries beside its fsync (apply.go).
	applier applier

	mu            sync.Mutex
	leader        uint64
	leaderChanged chan struct{}
	// leaderlessSince is when the member last had no leader (zero while
	// it has one): the measure of a lost quorum.
	leaderlessSince time.Time
	// leaderContact is when a leader's message last arrived, or this
	// member stopped leading (unix nanos).
	leaderContact atomic.Int64
	// openCommit is the commit index the log held when the member opened;
	// applied is the index the applier holds (written by the Ready loop
	// only, read by anyone). Until applied reaches openCommit the applier
	// is behind what this member may have served before it stopped
	// (Replayed).
	openCommit uint64
	applied    atomic.Uint64
	// Linearizable reads (readindex.go): the next request id, the reads
	// waiting for their read index, and those waiting for the applier.
	readSeq      atomic.Uint64
	readIndexes  *waitRegistry[uint64]
	appliedWaits appliedWaits

	// confMu keeps one membership change in flight: raft silently drops a
	// second one proposed before the first is applied.
	confMu sync.Mutex

	startOnce sync.Once
	stopOnce  sync.Once
	stop      chan struct{}
	rekeyC    chan rekeyRequest
	lostC     chan uint64 // a peer whose connection broke (PeerLost)
	fatal     chan error  // an error found outside the Ready loop that must stop it
	done      chan struct{}
	err       error // set before done closes
}

// Start runs the Ready loop until Stop or a fatal error.
func (n *Node) Start() {
	n.startOnce.Do(func() { go n.run() })
}

// Stop ends the Ready loop, fails waiting proposals with an error that is
// both ErrStopped and ErrOutcomeUnknown (their entries are in the log, and
// another member may commit them), and closes the log. It returns the
// error that stopped the loop, if any.
func (n *Node) Stop() error {
	n.stopOnce.Do(func() { close(n.stop) })
	n.Start() // a never-started node still needs its loop to close done
	<-n.done
	return n.err
}

// Done is closed when the Ready loop has ended.
func (n *Node) Done() <-chan struct{} { return n.done }

// Err is the error that ended the Ready loop; nil while running or after a
// clean Stop.
func (n *Node) Err() error {
	select {
	case <-n.done:
		return n.err
	default:
		return nil
	}
}

func (n *Node) run() {
	defer close(n.done)
	defer n.wait.cancelAll(errStoppedWaiting)
	ticker := time.NewTicker(n.cfg.TickInterval)
	defer ticker.Stop()
	n.applier.start(n.applyCommitted)
	err := n.loop(ticker.C)
	n.applier.stop()
	// The snapshot being written is recorded after a clean stop, and only
	// waited for after a failure: the log may not take another write.
	if job := n.snapshotting; job != nil {
		res := <-job.done
		if err == nil {
			err = n.snapshotDone(res)
		}
	}
	n.rn.Stop()
	n.snapshotSends.Wait()
	if cerr := n.disk.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		n.cfg.Logger.Log(context.Background(), stopLevel(err), "raft node stopped", "err", err)
	}
	n.err = err
	n.setLeader(raft.None)
}

// stopLevel is the level of the line saying why the member stopped. Its
// own removal is a change the cluster decided (a demotion, after which
// the node runs on as a worker, or a removal, which stops the daemon with
// node_removed): nothing to act on here. Any other failure is.
func stopLevel(err error) slog.Level {
	if errors.Is(err, ErrRemoved) {
		return slog.LevelInfo
	}
	return slog.LevelError
}

func (n *Node) loop(tick <-chan time.Time) error {
	// A member restarted from a snapshot already knows its voters, and may
	// see no Ready until an election timeout: try at once.
	n.campaignIfAlone()
	// campaign fires when this member's turn to campaign for a lost
	// leader's place comes (leaderlost.go).
	campaign := time.NewTimer(time.Hour)
	campaign.Stop()
	defer campaign.Stop()
	for {
		select {
		case <-tick:
			n.rn.Tick()
		case id := <-n.lostC:
			n.leaderLost(id, campaign)
		case <-campaign.C:
			n.campaignIfLeaderless()
		case rd := <-n.rn.Ready():
			if err := n.handleReady(rd); err != nil {
				return err
			}
			n.rn.Advance()
			for _, id := range n.appliedConfChanges {
				n.wait.trigger(id, nil)
			}
			n.appliedConfChanges = n.appliedConfChanges[:0]
			n.campaignIfAlone()
		case res := <-n.snapshotDoneC():
			if err := n.snapshotDone(res); err != nil {
				return err
			}
		case req := <-n.rekeyC:
			err := n.rekey(req.sealer)
			req.done <- err
			if err != nil {
				return err
			}
		case err := <-n.fatal:
			return err
		case <-n.stop:
			return nil
		}
	}
}

// handleReady carries out one Ready in the order of the package comment.
// Its committed entries are applied while its own entries are persisted
// when nothing ties the two together (overlapApply): a member with a core
// to spare need not wait for its fsync and then for the apply, one after
// the other (docs/adr/0046: a lone manager commits 15 % more writes).
func (n *Node) handleReady(rd raft.Ready) error {
	n.trackLeadership(rd)
	if k := len(rd.CommittedEntries); k > 0 {
		n.metrics.readyEntries.Observe(float64(k))
	}
	overlap := overlapApply(rd)
	if overlap {
		n.applier.work <- rd.CommittedEntries
	}
	err := n.persist(rd)
	if overlap {
		// Always waited for: what applying changes is the loop's again only
		// once it is done, failure or not.
		if aerr := <-n.applier.results; err == nil {
			err = aerr
		}
	} else if err == nil {
		err = n.applyCommitted(rd.CommittedEntries)
	}
	if err != nil {
		return err
	}
	n.deliverReadStates(rd.ReadStates)
	n.appliedWaits.release(n.applied.Load())
	n.dropStaleDecoded()
	if n.removedSelf {
		return ErrRemoved
	}
	return n.maybeSnapshot()
}

// overlapApply reports whether rd's committed entries may be applied while
// rd is persisted. They are committed, held by a quorum whatever this
// member's disk does next, so applying them does not wait for its fsync
// (etcd's server does the same). Not when rd carries a snapshot, which
// replaces the state being applied to, nor a conf change, whose peers and
// voters the messages sent meanwhile must already see; and only when rd
// waits on an fsync, the thing worth overlapping.
func overlapApply(rd raft.Ready) bool {
	return rd.MustSync && len(rd.CommittedEntries) > 0 && raft.IsEmptySnap(rd.Snapshot) &&
		plainWrites(rd.CommittedEntries) == len(rd.CommittedEntries)
}

// persist writes rd's snapshot, hard state and entries to disk, then to
// the in-memory log, and only then sends its messages.
func (n *Node) persist(rd raft.Ready) error {
	hasSnap := !raft.IsEmptySnap(rd.Snapshot)
	if hasSnap {
		// A leader's snapshot replaces the state: ours must be on disk or
		// dropped first, not recorded after it.
		if err := n.awaitSnapshot(); err != nil {
			return err
		}
		if err := n.disk.SaveSnapshot(rd.Snapshot); err != nil {
			return err
		}
	}
	saveStart := time.Now()
	if err := n.disk.Save(rd.HardState, rd.Entries); err != nil {
		return err
	}
	if rd.MustSync {
		n.metrics.walSync.Observe(time.Since(saveStart).Seconds())
	}
	if hasSnap {
		if err := n.restoreSnapshot(rd.Snapshot); err != nil {
			return err
		}
		// The leader's snapshot, at the leader's index: this member's next
		// large one parts from the leader's (snapshotDue).
		lead, _ := n.Leader()
		n.restoredFrom(lead)
	}
	if err := n.mem.Append(rd.Entries); err != nil {
		return fmt.Errorf("append to raft log: %w", err)
	}
	n.send(rd.Messages)
	return nil
}

// trackLeadership records who leads as of rd. Proposals still waiting
// when this member stops leading, or leads in a later term than before
// (deposed and elected again while the previous Ready was handled, so its
// entries of the old term may have been overwritten), fail with
// ErrLostLeadership: raft will not tell about those entries again.
func (n *Node) trackLeadership(rd raft.Ready) {
	if !raft.IsEmptyHardState(rd.HardState) {
		n.term = rd.HardState.Term
	}
	if rd.SoftState != nil {
		if n.wasLeader && rd.SoftState.RaftState != raft.StateLeader {
			// It led until now: the last leader it heard from is itself,
			// and the removal probe waits as long from here as from any
			// leader's message (a hand-over, a step-down).
			n.leaderContact.Store(time.Now().UnixNano())
		}
		n.wasLeader = rd.SoftState.RaftState == raft.StateLeader
		n.setLeader(rd.SoftState.Lead)
	}
	if n.leaderTerm != 0 && (!n.wasLeader || n.term != n.leaderTerm) {
		n.wait.cancelAll(ErrLostLeadership)
	}
	n.leaderTerm = 0
	if n.wasLeader {
		n.leaderTerm = n.term
	}
}

// campaignIfAlone starts an election at once when this member is the only
// voter: nobody else can win, so waiting out an election timeout would
// only delay a lone manager's start by a second or two.
func (n *Node) campaignIfAlone() {
	if n.campaigned || n.wasLeader || len(n.confState.Voters) != 1 || n.confState.Voters[0] != n.raftID {
		return
	}
	if st := n.rn.Status(); st.RaftState != raft.StateFollower || st.Lead != raft.None {
		return // an election is already under way, or won
	}
	n.campaigned = true
	if err := n.rn.Campaign(context.Background()); err != nil {
		n.cfg.Logger.Warn("start election", "err", err)
	}
}

func (n *Node) send(msgs []raftpb.Message) {
	if len(msgs) == 0 {
		return
	}
	if n.cfg.Transport == nil {
		n.cfg.Logger.Debug("no transport; dropping raft messages", "count", len(msgs))
		return
	}
	n.cfg.Transport.Send(n.sendSnapshots(msgs))
}
