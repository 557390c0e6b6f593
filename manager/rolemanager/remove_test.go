package rolemanager

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/jaco-project/jaco/manager/voterset"
)

// group builds a fake group led by "a" with the given voters and
// nonvoters (all caught up).
func group(t *testing.T, voters, nonvoters []string) *fakeRaft {
	t.Helper()
	f := newFakeRaft("a")
	for _, name := range append(slices.Clone(voters), nonvoters...) {
		if name == "a" {
			continue
		}
		id := f.join(name)
		f.replicate()
		if slices.Contains(voters, name) {
			if err := f.Promote(context.Background(), id); err != nil {
				t.Fatal(err)
			}
		}
	}
	return f
}

func TestRemoveMemberKeepsVotersAffordable(t *testing.T) {
	for _, tc := range []struct {
		name              string
		voters, nonvoters []string
		remove            string
		wantVoters        []string
	}{
		// 3 → 2 members: target 1, so the leaver and one more voter are
		// demoted before the removal; never 2 voters of 2 members.
		{"three voters", []string{"a", "b", "c"}, nil, "b", []string{"a"}},
		// 4 → 3 members: target 3; only the leaver is demoted (the
		// reconciler later promotes d).
		{"three voters and a learner", []string{"a", "b", "c"}, []string{"d"}, "c", []string{"a", "b"}},
		// 5 → 4 members: target 3; the leaver goes, then the
		// lexicographically-last other voter (e).
		{"five voters", []string{"a", "b", "c", "d", "e"}, nil, "b", []string{"a", "c", "d"}},
		// A nonvoter leaves without any demotion.
		{"a learner", []string{"a", "b", "c"}, []string{"d"}, "d", []string{"a", "b", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := group(t, tc.voters, tc.nonvoters)
			r, _, _ := newTestReconciler(f)
			if err := r.RemoveMember(context.Background(), raftIDOf(tc.remove)); err != nil {
				t.Fatal(err)
			}
			if got := f.voterNames(); !slices.Equal(got, tc.wantVoters) {
				t.Fatalf("voters after removing %s: %v, want %v", tc.remove, got, tc.wantVoters)
			}
			for _, m := range f.Members() {
				if m.NodeId == tc.remove {
					t.Fatalf("%s still a member", tc.remove)
				}
			}
		})
	}
}

func TestRemoveMemberRefusals(t *testing.T) {
	f := group(t, []string{"a", "b", "c"}, nil)
	r, _, _ := newTestReconciler(f)
	ctx := context.Background()
	if err := r.RemoveMember(ctx, raftIDOf("a")); !errors.Is(err, voterset.ErrRemoveLeader) {
		t.Errorf("removing the leader: %v, want ErrRemoveLeader", err)
	}
	if err := r.RemoveMember(ctx, raftIDOf("zz")); !errors.Is(err, voterset.ErrNoSuchMember) {
		t.Errorf("removing a stranger: %v, want ErrNoSuchMember", err)
	}
	f.set(func(f *fakeRaft) { f.lead = raftIDOf("b") })
	if err := r.RemoveMember(ctx, raftIDOf("c")); !errors.Is(err, voterset.ErrNotLeading) {
		t.Errorf("removing on a follower: %v, want ErrNotLeading", err)
	}
	if got := f.voterNames(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("refused removals changed the voters: %v", got)
	}
}

func TestHandOver(t *testing.T) {
	ctx := context.Background()
	// Two managers, one voter: the nonvoter is promoted, then leads.
	f := group(t, []string{"a"}, []string{"b"})
	r, _, _ := newTestReconciler(f)
	to, err := r.HandOver(ctx)
	if err != nil || to != raftIDOf("b") {
		t.Fatalf("HandOver = %x, %v; want b", to, err)
	}
	if f.Status().Lead != raftIDOf("b") || !slices.Equal(f.voterNames(), []string{"a", "b"}) {
		t.Fatalf("after handover: leader %x, voters %v", f.Status().Lead, f.voterNames())
	}

	// Three voters: straight to a voter, nobody promoted.
	f = group(t, []string{"a", "b", "c"}, []string{"d"})
	r, _, _ = newTestReconciler(f)
	to, err = r.HandOver(ctx)
	if err != nil || (to != raftIDOf("b") && to != raftIDOf("c")) {
		t.Fatalf("HandOver = %x, %v; want b or c", to, err)
	}
	if !slices.Equal(f.voterNames(), []string{"a", "b", "c"}) {
		t.Fatalf("handover among voters changed the voters: %v", f.voterNames())
	}

	// Alone: nobody to hand over to.
	f = group(t, []string{"a"}, nil)
	r, _, _ = newTestReconciler(f)
	if _, err := r.HandOver(ctx); !errors.Is(err, voterset.ErrLastManager) {
		t.Fatalf("HandOver alone: %v, want ErrLastManager", err)
	}
}
