package rolemanager

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.etcd.io/raft/v3"

	"github.com/jaco-project/jaco/api"
)

// Defaults for Config.
const (
	DefaultInterval     = time.Second
	DefaultPromoteAfter = 3 * time.Second
)

// Raft is the leader's raft member, as the reconciler needs it
// (implemented by *raft.Node in manager/state/raft).
type Raft interface {
	RaftID() uint64
	// Status is raft's view of the group; Progress is filled only on the
	// leader.
	Status() raft.Status
	// Members returns the members with their node ids, sorted by raft id.
	Members() []*api.RaftMember
	// Promote makes a nonvoter a voter and returns once that is applied.
	Promote(ctx context.Context, raftID uint64) error
	// Demote makes a voter a nonvoter and returns once that is applied.
	Demote(ctx context.Context, raftID uint64) error
	// Remove takes a member out of the group for good, once applied.
	Remove(ctx context.Context, raftID uint64) error
	// TransferLeadership hands leadership to the voter to and returns once
	// this member no longer leads.
	TransferLeadership(ctx context.Context, to uint64) error
}

// Config configures a VoterReconciler. Zero durations take the defaults.
type Config struct {
	Raft         Raft
	Interval     time.Duration // between ticks of Run; DefaultInterval
	PromoteAfter time.Duration // a nonvoter's settle window; DefaultPromoteAfter
	Logger       *slog.Logger  // nil discards
	Now          func() time.Time
}

// VoterReconciler keeps the voter set at voterset.TargetVoters, one change
// per tick.
// It acts only while its member leads. Ticks are serialized, so a change
// is applied before the next one is decided.
type VoterReconciler struct {
	raft         Raft
	interval     time.Duration
	promoteAfter time.Duration
	log          *slog.Logger
	now          func() time.Time

	mu sync.Mutex // serializes Tick; guards the fields below
	// term is the leader term the clocks below belong to.
	term uint64
	// seen is when each raft id in the configuration was first seen this
	// term.
	seen map[uint64]time.Time
	// mismatched are the raft ids in only one of raft's configuration and
	// the member list at the last tick, logged when they first appeared.
	mismatched map[uint64]bool
	// active is when the leader last saw each member RecentActive.
	active map[uint64]time.Time
}

// NewVoterReconciler returns a reconciler for cfg.Raft.
func NewVoterReconciler(cfg Config) *VoterReconciler {
	r := &VoterReconciler{
		raft:         cfg.Raft,
		interval:     cmpOr(cfg.Interval, DefaultInterval),
		promoteAfter: cmpOr(cfg.PromoteAfter, DefaultPromoteAfter),
		log:          cfg.Logger,
		now:          cfg.Now,
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.now == nil {
		r.now = time.Now
	}
	r.resetClocks(0)
	return r
}

func cmpOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Run reconciles at once and then every Interval until ctx ends (the
// leader runner cancels it when leadership is lost). Errors are logged and
// retried at the next tick. Run returns when ctx is done and leaves no
// goroutine behind.
func (r *VoterReconciler) Run(ctx context.Context) {
	every(ctx, r.interval, func() {
		if _, err := r.Tick(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("voter reconciliation failed; retrying at the next tick", "err", err)
		}
	})
}

// every calls pass at once and then every interval until ctx ends; it
// returns once ctx is done and pass has returned.
func every(ctx context.Context, interval time.Duration, pass func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for ctx.Err() == nil {
		pass()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// Tick runs one reconciliation: it reads raft's status, decides, and
// carries out at most one promotion or demotion, waiting until it is
// applied. It does nothing unless this member leads. The error is that of
// the change, if any. Concurrent calls are serialized.
func (r *VoterReconciler) Tick(ctx context.Context) (Decision, error) {
	r.mu.Lock()
	defer r.mu.Unlock()

	st := r.raft.Status()
	if st.Lead == raft.None || st.Lead != r.raft.RaftID() {
		if r.term != 0 {
			r.resetClocks(0)
		}
		return Decision{Reason: "not the leader"}, nil
	}
	if st.Term != r.term {
		r.resetClocks(st.Term)
	}
	if len(st.Config.Voters[1]) > 0 || len(st.Config.LearnersNext) > 0 {
		return Decision{Reason: "a joint configuration is in progress"}, nil
	}

	now := r.now()
	d := Decide(r.members(st, now), st.Lead, now, r.promoteAfter)
	if d.Action == NoAction {
		return d, nil
	}
	r.log.Info("changing raft suffrage", "action", d.Action.String(), "node_id", d.NodeID,
		"raft_id", fmt.Sprintf("%x", d.RaftID), "reason", d.Reason)
	var err error
	switch d.Action {
	case Promote:
		err = r.raft.Promote(ctx, d.RaftID)
	case Demote:
		err = r.raft.Demote(ctx, d.RaftID)
	}
	if err != nil {
		return d, fmt.Errorf("%s %s (raft id %x): %w", d.Action, d.NodeID, d.RaftID, err)
	}
	return d, nil
}

// activeWindow is how long a member counts as active after the leader last
// saw it so. raft clears RecentActive every election timeout (CheckQuorum)
// and sets it again as replies arrive; a reconciler ticking in step with
// those clears would otherwise find a healthy member inactive tick after
// tick.
const activeWindow = 3 * time.Second

// activeRecently records a sighting of id as active and reports whether
// one falls within activeWindow of now.
func (r *VoterReconciler) activeRecently(id uint64, activeNow bool, now time.Time) bool {
	if activeNow {
		r.active[id] = now
	}
	last, ok := r.active[id]
	return ok && now.Sub(last) <= activeWindow
}

// members joins raft's configuration with the member list and the
// first-seen clocks into the policy's view; members first seen now get
// now.
func (r *VoterReconciler) members(st raft.Status, now time.Time) []Member {
	nodeIDs := make(map[uint64]string)
	for _, m := range r.raft.Members() {
		nodeIDs[m.RaftId] = m.NodeId
	}
	mismatched := make(map[uint64]bool)
	var out []Member
	add := func(id uint64, voter bool) {
		since, ok := r.seen[id]
		if !ok {
			since = now
		}
		pr, ok := st.Progress[id]
		m := Member{
			RaftID:        id,
			NodeID:        nodeIDs[id],
			Voter:         voter,
			CaughtUp:      ok && pr.Match >= st.Commit && r.activeRecently(id, pr.RecentActive, now),
			InConfigSince: since,
		}
		if m.NodeID == "" {
			mismatched[id] = true
			if !r.mismatched[id] {
				r.log.Warn("raft configuration holds a member the member list does not name; it is never chosen",
					"raft_id", fmt.Sprintf("%x", id), "voter", voter)
			}
		}
		out = append(out, m)
	}
	for id := range st.Config.Voters[0] {
		add(id, true)
	}
	for id := range st.Config.Learners {
		add(id, false)
	}

	// Keep the clocks of the members still in the configuration only:
	// raft ids are never reused.
	seen := make(map[uint64]time.Time, len(out))
	for _, m := range out {
		seen[m.RaftID] = m.InConfigSince
	}
	r.seen = seen

	for id, nodeID := range nodeIDs {
		if _, ok := seen[id]; ok {
			continue
		}
		mismatched[id] = true
		if !r.mismatched[id] {
			r.log.Info("member is not in the raft configuration; skipped",
				"raft_id", fmt.Sprintf("%x", id), "node_id", nodeID)
		}
	}
	r.mismatched = mismatched
	return out
}

// resetClocks forgets what was seen in an earlier term.
func (r *VoterReconciler) resetClocks(term uint64) {
	r.term = term
	r.seen = make(map[uint64]time.Time)
	r.mismatched = make(map[uint64]bool)
	r.active = make(map[uint64]time.Time)
}
