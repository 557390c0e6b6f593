package raft

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/raft/rafttest"
)

// ghostPeer is the second voter of a two-member group, played by the test:
// it grants every vote and acknowledges none of the proposals, so the
// member leads but commits none of them, and the test decides when leadership
// ends. It reports each proposal the leader sends it, which proves the
// entry reached the leader's log.
type ghostPeer struct {
	id   uint64
	node *Node

	sent     chan struct{} // closed at the first MsgApp carrying a proposal
	sentOnce sync.Once
}

func (g *ghostPeer) Send(msgs []raftpb.Message) {
	for _, m := range msgs {
		switch m.Type {
		case raftpb.MsgPreVote, raftpb.MsgVote:
			// The answer carries the term asked for, as raft's do.
			resp := raftpb.Message{Type: raftpb.MsgPreVoteResp, From: g.id, To: m.From, Term: m.Term}
			if m.Type == raftpb.MsgVote {
				resp.Type = raftpb.MsgVoteResp
			}
			// Send must not block the Ready loop that calls it.
			go func() { _ = g.node.Step(context.Background(), resp) }()
		case raftpb.MsgApp:
			proposal := false
			for _, e := range m.Entries {
				if e.Type == raftpb.EntryNormal && len(e.Data) > 0 {
					proposal = true
				}
			}
			if proposal {
				g.sentOnce.Do(func() { close(g.sent) })
				continue
			}
			if len(m.Entries) == 0 {
				// Its Index may be a proposal's: acknowledging it would
				// acknowledge that proposal.
				continue
			}
			// The new leader's empty entry is acknowledged, so its
			// progress leaves probing and proposals are sent at once.
			resp := raftpb.Message{Type: raftpb.MsgAppResp, From: g.id, To: m.From, Term: m.Term, Index: m.Index + uint64(len(m.Entries))}
			go func() { _ = g.node.Step(context.Background(), resp) }()
		}
	}
}

func (g *ghostPeer) AddPeer(uint64, string) error { return nil }
func (g *ghostPeer) RemovePeer(uint64)            {}

// startWithGhost starts a member of a two-voter group whose other voter is
// a ghostPeer, makes it campaign, and waits until it leads. Raft's clock
// never ticks: nothing but the test changes who leads.
func startWithGhost(t *testing.T) (*Node, *ghostPeer) {
	t.Helper()
	h := newHarness(t) // for its sealer
	dir := filepath.Join(t.TempDir(), "raft")
	self := &api.RaftMember{RaftId: 1, NodeId: "self", Address: "127.0.0.1:7001"}
	ghostMember := &api.RaftMember{RaftId: 2, NodeId: "ghost", Address: "127.0.0.1:7002"}
	if err := BootstrapStatic(dir, h.sealer, "cluster-g", self, []*api.RaftMember{self, ghostMember},
		&api.InternalRaftRequest{Actions: rafttest.Put("init", "ghost")}); err != nil {
		t.Fatal(err)
	}
	ghost := &ghostPeer{id: ghostMember.RaftId, sent: make(chan struct{})}
	kv := rafttest.NewKV()
	n, err := New(Config{StateDir: dir, Sealer: h.sealer, Applier: kv, Transport: ghost,
		Logger: slog.New(slog.DiscardHandler), TickInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ghost.node = n
	n.Start()
	t.Cleanup(func() { n.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// raft will not campaign before it has applied the bootstrap's
	// membership, which the init entry follows.
	for {
		if v, _ := kv.Get("init"); v == "ghost" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the bootstrap entries were never applied")
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := n.rn.Campaign(ctx); err != nil {
		t.Fatal(err)
	}
	for !n.IsLeader() {
		_, changed := n.Leader()
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("the member did not win the ghost's vote")
		}
	}
	return n, ghost
}

// proposeInFlight proposes on n and returns the channel of its outcome once
// the entry is in the leader's log and on its way to the ghost.
func proposeInFlight(t *testing.T, n *Node, ghost *ghostPeer) <-chan error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- n.Propose(context.Background(), rafttest.Put("k", "v")) }()
	select {
	case <-ghost.sent:
	case err := <-errc:
		t.Fatalf("Propose returned %v before its entry was sent", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the proposal never reached the log")
	}
	return errc
}

func outcome(t *testing.T, errc <-chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Propose still waiting")
		return nil
	}
}

// TestProposalOutcomeUnknownWhenLeadershipLost: an entry in the log when
// its leader is deposed may still be committed by the next leader, so the
// proposer hears "outcome unknown", never the retryable ErrNotLeader.
// Afterwards a proposal refused before raft took it is ErrNotLeader.
func TestProposalOutcomeUnknownWhenLeadershipLost(t *testing.T) {
	n, ghost := startWithGhost(t)
	errc := proposeInFlight(t, n, ghost)
	// The ghost speaks as the leader of a later term: n steps down.
	term := n.Status().Term
	if err := n.Step(context.Background(), raftpb.Message{Type: raftpb.MsgHeartbeat, From: ghost.id, To: n.RaftID(), Term: term + 1}); err != nil {
		t.Fatal(err)
	}
	err := outcome(t, errc)
	if !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, ErrLostLeadership) || errors.Is(err, ErrNotLeader) {
		t.Fatalf("proposal whose leader was deposed: %v; want ErrLostLeadership (outcome unknown), not ErrNotLeader", err)
	}
	err = n.Propose(context.Background(), rafttest.Put("k", "w"))
	if !errors.Is(err, ErrNotLeader) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("proposal on a follower: %v; want ErrNotLeader alone", err)
	}
}

// TestProposalOutcomeUnknownWhenStopped: a member stopped while its entry
// waits to commit cannot tell whether it will; the proposer hears
// "outcome unknown", not the retryable ErrStopped alone.
func TestProposalOutcomeUnknownWhenStopped(t *testing.T) {
	n, ghost := startWithGhost(t)
	errc := proposeInFlight(t, n, ghost)
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := outcome(t, errc); !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("proposal waiting when the member stopped: %v; want ErrOutcomeUnknown", err)
	}
}

// TestProposalOutcomeUnknownWhenCallerGivesUp: a caller that stops
// waiting leaves its entry in the log.
func TestProposalOutcomeUnknownWhenCallerGivesUp(t *testing.T) {
	n, ghost := startWithGhost(t)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- n.Propose(ctx, rafttest.Put("k", "v")) }()
	select {
	case <-ghost.sent:
	case <-time.After(10 * time.Second):
		t.Fatal("the proposal never reached the log")
	}
	cancel()
	if err := outcome(t, errc); !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
		t.Fatalf("proposal whose caller gave up: %v; want ErrOutcomeUnknown and context.Canceled", err)
	}
}

// TestBarrierIsNeverOutcomeUnknown: an empty batch changes nothing, so a
// barrier whose leader is deposed is simply ErrNotLeader (callers such as
// the backup answer the retryable no_leader).
func TestBarrierIsNeverOutcomeUnknown(t *testing.T) {
	n, ghost := startWithGhost(t)
	errc := make(chan error, 1)
	go func() { errc <- n.Barrier(context.Background()) }()
	// The barrier's entry carries no actions but is not empty (it has an
	// id), so the ghost sees it like any proposal.
	select {
	case <-ghost.sent:
	case <-time.After(10 * time.Second):
		t.Fatal("the barrier never reached the log")
	}
	term := n.Status().Term
	if err := n.Step(context.Background(), raftpb.Message{Type: raftpb.MsgHeartbeat, From: ghost.id, To: n.RaftID(), Term: term + 1}); err != nil {
		t.Fatal(err)
	}
	if err := outcome(t, errc); !errors.Is(err, ErrNotLeader) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("barrier whose leader was deposed: %v; want ErrNotLeader alone", err)
	}
}

// TestReelectedLeaderFailsOldProposals: raft may depose a leader and elect
// it again while the Ready loop is busy, so no Ready shows it not leading;
// the term shows it. Proposals of the old term fail with ErrLostLeadership
// instead of waiting for entries the interim leader may have overwritten.
func TestReelectedLeaderFailsOldProposals(t *testing.T) {
	h := newHarness(t)
	n, err := New(Config{StateDir: h.dir, Sealer: h.sealer, Applier: rafttest.NewKV(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop() })
	// Readys handed in by hand: the loop is not started.
	hs, _, err := n.mem.InitialState()
	if err != nil {
		t.Fatal(err)
	}
	hs.Term++
	leading := &raft.SoftState{Lead: n.RaftID(), RaftState: raft.StateLeader}
	if err := n.handleReady(raft.Ready{SoftState: leading, HardState: hs}); err != nil {
		t.Fatal(err)
	}
	waiting := n.wait.register(1)
	hs.Term++
	hs.Vote = n.RaftID()
	if err := n.handleReady(raft.Ready{HardState: hs}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waiting:
		if !errors.Is(err, ErrLostLeadership) {
			t.Fatalf("proposal of the old term: %v, want ErrLostLeadership", err)
		}
	default:
		t.Fatal("a proposal of the old term still waits after the member leads in a new one")
	}
}
