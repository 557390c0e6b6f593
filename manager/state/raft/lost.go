package raft

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/internal/durable"
	"github.com/jaco-project/jaco/manager/state/raft/storage"
)

// A member whose log lost entries it had acknowledged (a disk that lied
// about a sync, a WAL cut by hand) must never take part as if it held
// them: its vote could elect a leader without them, and raft panics once
// a leader's commit index passes the end of its log. It is caught two
// ways (docs/adr/0020-lost-acknowledged-entries.md): at open, when the
// log would end before its own commit index (storage.Open); and running,
// when a heartbeat's commit index, the leader's count of what this member
// acknowledged, lies past the end of its log. Either way the member
// stops with storage.ErrLostAcknowledged and the runbook, and the second
// leaves LostEntriesMarker so that every later start refuses at once.

// LostEntriesMarker is the file, in the state dir, that records that the
// leader counted on entries this member's log no longer holds. New
// refuses to open a state dir that has it.
const LostEntriesMarker = "lost-entries"

// lostEntriesRunbook says what an operator does with such a member.
func lostEntriesRunbook(nodeID string) string {
	if nodeID == "" {
		nodeID = "NODE"
	}
	return "this manager must not rejoin with this log. Keep a copy of its data dir, then, on another manager, " +
		"remove it (`jaco node remove --force " + nodeID + "`), wipe this data dir and join it again with a fresh " +
		"manager join token; if it was the only manager, restore the newest backup instead (`jaco restore`). " +
		"See docs/operator-guide.md, \"Crashes and damaged logs\""
}

// refuseLostEntries returns the error New answers for a state dir whose
// member was found to have lost acknowledged entries, or nil.
func refuseLostEntries(stateDir string) error {
	b, err := os.ReadFile(filepath.Join(stateDir, LostEntriesMarker))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("read %s: %w", LostEntriesMarker, err)
	}
	return fmt.Errorf("%w: %s (recorded in %s)", storage.ErrLostAcknowledged,
		strings.TrimSpace(string(b)), filepath.Join(stateDir, LostEntriesMarker))
}

// errCommitPastLog refuses a heartbeat whose commit index lies past this
// member's log from anyone but the leader it follows in its current term.
var errCommitPastLog = errors.New("heartbeat commits past the end of this member's log, and its sender is not the leader of this term")

// leaderCountsLost reports, for a heartbeat raft would act on, whether
// its commit index lies past the last entry this member persisted, and
// says so. A leader sends min(its commit index, what this member
// acknowledged), and a member acknowledges only what it has synced, so a
// healthy member never sees one; raft would panic on it (tocommit out of
// range). Only the leader this member follows in its current term is
// believed (any sender of the current term while it follows none yet, as
// after a restart: raft would take that sender as its leader): a
// heartbeat like it from another member, or from a newer term (whose
// leader has not counted on anything of this member's yet), is refused
// with errCommitPastLog and changes nothing, so that a manager
// certificate cannot stop a member by claiming an impossible commit.
func (n *Node) leaderCountsLost(m raftpb.Message) (string, error) {
	if m.Type != raftpb.MsgHeartbeat {
		return "", nil
	}
	last, err := n.mem.LastIndex()
	if err != nil || m.Commit <= last {
		return "", nil
	}
	st := n.rn.Status()
	switch {
	case m.Term < st.Term:
		return "", nil // raft ignores a heartbeat from an old term
	case m.Term > st.Term || (st.Lead != 0 && m.From != st.Lead):
		return "", fmt.Errorf("from %x (term %d, commit %d; this member is at term %d following %x, log ends at %d): %w",
			m.From, m.Term, m.Commit, st.Term, st.Lead, last, errCommitPastLog)
	}
	return fmt.Sprintf("the raft log in %s ends at index %d, but leader %x counts on this member holding index %d",
		filepath.Join(n.cfg.StateDir, "wal"), last, m.From, m.Commit), nil
}

// lostEntries stops the member for what leaderCountsLost said, first
// leaving the marker so that no later start takes part with this log, and
// returns the error it stops with.
func (n *Node) lostEntries(detail string) error {
	text := detail + "; " + lostEntriesRunbook(n.nodeID)
	path := filepath.Join(n.cfg.StateDir, LostEntriesMarker)
	if err := durable.WriteFile(path, []byte(text+"\n"), 0o600); err != nil {
		n.cfg.Logger.Error("record lost raft entries", "file", path, "err", err)
	}
	err := fmt.Errorf("%w: %s", storage.ErrLostAcknowledged, text)
	select {
	case n.fatal <- err:
	default: // already stopping with it
	}
	return err
}
