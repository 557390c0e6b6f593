package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

func TestUpdateReadsItsOwnWrites(t *testing.T) {
	s, p := withProposer(t)
	err := s.Update(context.Background(), func(tx *Tx) error {
		if err := tx.Create(&api.Service{Id: "s1", Spec: &api.ServiceSpec{Name: "web"}}); err != nil {
			return err
		}
		if err := tx.Create(&api.Task{Id: "t1", ServiceId: "s1"}); err != nil {
			return err
		}
		pending := tx.GetTask("t1")
		if pending == nil || tx.FindServiceByName("web").GetId() != "s1" {
			t.Errorf("tx does not see its creates: task %v, services %v", pending, tx.ListServices())
		}
		s.View(func(r ReadTx) {
			if got := r.GetTask("t1"); got != nil {
				t.Errorf("View sees a pending task: %v", got)
			}
		})
		// A second write to a pending object carries the version read.
		pending.NodeId = "n1"
		return tx.Update(pending)
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.proposed() != 1 {
		t.Fatalf("%d proposals, want 1", p.proposed())
	}
	s.View(func(r ReadTx) {
		got := r.GetTask("t1")
		if got.GetNodeId() != "n1" || got.GetMeta().GetVersion() != 1 {
			t.Errorf("task = %v, want on n1 at version 1", got)
		}
		if m := got.GetMeta(); m.GetCreatedAt() == nil || !proto.Equal(m.GetCreatedAt(), m.GetUpdatedAt()) {
			t.Errorf("create timestamps = %v", m)
		}
	})
}

func TestUpdateProposesNothing(t *testing.T) {
	failure := errors.New("changed my mind")
	tests := []struct {
		name    string
		fn      func(tx *Tx) error
		wantErr error
	}{
		{"fn fails after writing", func(tx *Tx) error {
			if err := tx.Create(task("t1", "s1", "", 0)); err != nil {
				return err
			}
			return failure
		}, failure},
		{"no writes", func(tx *Tx) error {
			tx.ListTasks()
			return nil
		}, nil},
		{"refused write", func(tx *Tx) error {
			return tx.Update(task("t9", "s1", "", 0))
		}, ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, p := withProposer(t)
			if err := s.Update(context.Background(), tc.fn); !errors.Is(err, tc.wantErr) {
				t.Fatalf("Update = %v, want %v", err, tc.wantErr)
			}
			if p.proposed() != 0 {
				t.Errorf("%d proposals, want 0", p.proposed())
			}
			s.View(func(r ReadTx) {
				if got := r.ListTasks(); len(got) != 0 {
					t.Errorf("store holds %v", got)
				}
			})
		})
	}
}

func TestUpdateChecksEachWrite(t *testing.T) {
	s, _ := withProposer(t)
	first := func(tx *Tx) error { return tx.Create(node("n1", "h1", 0, 0)) }
	if err := s.Update(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	err := s.Update(context.Background(), func(tx *Tx) error {
		if err := tx.Create(node("n2", "h1", 0, 0)); !errors.Is(err, ErrExists) {
			t.Errorf("create on a taken hostname = %v, want ErrExists", err)
		}
		if err := tx.Update(node("n1", "h1", 0, 0)); !errors.Is(err, ErrVersionConflict) {
			t.Errorf("update from version 0 = %v, want ErrVersionConflict", err)
		}
		// Checked against this Tx's own earlier writes, read or not.
		if err := tx.Create(node("n2", "h2", 0, 0)); err != nil {
			return err
		}
		if err := tx.Create(node("n2", "h9", 0, 0)); !errors.Is(err, ErrExists) {
			t.Errorf("create of an id created earlier in the Tx = %v, want ErrExists", err)
		}
		if err := tx.Create(node("n3", "h2", 0, 0)); !errors.Is(err, ErrExists) {
			t.Errorf("create on a hostname taken earlier in the Tx = %v, want ErrExists", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.View(func(r ReadTx) {
		if got := len(r.ListNodes()); got != 2 {
			t.Errorf("%d nodes, want 2: refused writes must not be recorded", got)
		}
	})
}

func TestUpdateVersionConflict(t *testing.T) {
	s, p := withProposer(t)
	ctx := context.Background()
	if err := s.Update(ctx, func(tx *Tx) error { return tx.Create(node("n1", "h1", 0, 0)) }); err != nil {
		t.Fatal(err)
	}
	var created *api.Node
	s.View(func(r ReadTx) { created = r.GetNode("n1") })

	err := s.Update(ctx, func(tx *Tx) error {
		n := tx.GetNode("n1")
		// Another manager's write is applied while this fn runs.
		other := proto.Clone(n).(*api.Node)
		other.Address = "elsewhere:7000"
		if err := p.Propose(ctx, []*api.StoreAction{act(t, update, other)}); err != nil {
			t.Fatal(err)
		}
		n.Hostname = "h2"
		return tx.Update(n)
	})
	if !errors.Is(err, ErrVersionConflict) {
		t.Fatalf("Update = %v, want ErrVersionConflict", err)
	}
	s.View(func(r ReadTx) {
		got := r.GetNode("n1")
		if got.GetHostname() != "h1" || got.GetAddress() != "elsewhere:7000" {
			t.Errorf("node = %v, want the other write only", got)
		}
		if !proto.Equal(got.GetMeta().GetCreatedAt(), created.GetMeta().GetCreatedAt()) {
			t.Errorf("update moved created_at: %v, was %v", got.GetMeta(), created.GetMeta())
		}
	})
}

func TestUpdateWithoutProposer(t *testing.T) {
	s := newStore(t)
	err := s.Update(context.Background(), func(tx *Tx) error { return tx.Create(task("t1", "", "", 0)) })
	if err == nil {
		t.Fatal("Update without a proposer succeeded")
	}
}

// TestReplicasAgree feeds one log, made of random Updates and raw entries
// (some of them refused), to replicas that decode it separately, and
// compares their content byte for byte.
func TestReplicasAgree(t *testing.T) {
	leader, p := withProposer(t)
	p.replicas = append(p.replicas, newStore(t), newStore(t))
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	id := func(prefix string, n int) string { return prefix + strconv.Itoa(rng.IntN(n)) }
	refused := 0

	for range 500 {
		switch rng.IntN(4) {
		case 0: // a create, possibly of a taken id or hostname: refused in the Tx
			_ = leader.Update(ctx, func(tx *Tx) error {
				return tx.Create(node(id("n", 20), id("h", 20), rng.Uint64N(5), 0))
			})
		case 1:
			_ = leader.Update(ctx, func(tx *Tx) error {
				return tx.Create(task(id("t", 50), id("s", 3), "", 0))
			})
		case 2: // read, modify, write: moves tasks between nodes
			_ = leader.Update(ctx, func(tx *Tx) error {
				for _, tk := range tx.ListTasks() {
					if rng.IntN(3) == 0 {
						tk.NodeId = id("n", 20)
						if err := tx.Update(tk); err != nil {
							return err
						}
					}
				}
				return nil
			})
		case 3: // a raw entry with a guessed version: often refused by Apply
			err := p.Propose(ctx, []*api.StoreAction{
				act(t, create, task(id("t", 50), "s0", "", 0)),
				act(t, del, task(id("t", 50), "", "", uint64(rng.IntN(p.proposed()+1)))),
			})
			if err != nil {
				refused++
			}
		}
	}
	if snap := leader.Save(); len(snap.GetTasks()) == 0 || len(snap.GetNodes()) == 0 || refused == 0 {
		t.Fatalf("the log is too tame to compare (%d entries refused): %v", refused, snap)
	}
	for _, r := range p.replicas[1:] {
		sameContent(t, leader, r)
		if r.AppliedIndex() != leader.AppliedIndex() {
			t.Errorf("applied %d, leader %d", r.AppliedIndex(), leader.AppliedIndex())
		}
	}
}

// UpdateRetrying runs fn again on the fresh state after a conflict, and
// gives up with the conflict after its attempts.
func TestUpdateRetrying(t *testing.T) {
	s, p := withProposer(t)
	ctx := context.Background()
	if err := s.Update(ctx, func(tx *Tx) error { return tx.Create(node("n1", "h1", 0, 0)) }); err != nil {
		t.Fatal(err)
	}
	raced := 0
	// rename(races) renames n1, and while it runs another write to n1
	// commits, the first races times.
	rename := func(races int) func(tx *Tx) error {
		raced = 0
		return func(tx *Tx) error {
			n := tx.GetNode("n1")
			if raced < races {
				raced++
				other := proto.Clone(n).(*api.Node)
				other.Address = fmt.Sprintf("elsewhere-%d:7000", raced)
				if err := p.Propose(ctx, []*api.StoreAction{act(t, update, other)}); err != nil {
					t.Fatal(err)
				}
			}
			n.Hostname = "h2"
			return tx.Update(n)
		}
	}
	if err := s.UpdateRetrying(ctx, 3, rename(2)); err != nil {
		t.Fatalf("UpdateRetrying behind 2 racing writes, 3 attempts: %v", err)
	}
	s.View(func(r ReadTx) {
		if got := r.GetNode("n1"); got.GetHostname() != "h2" || got.GetAddress() != "elsewhere-2:7000" {
			t.Errorf("node = %v, want both writes", got)
		}
	})
	if err := s.UpdateRetrying(ctx, 2, rename(5)); !errors.Is(err, ErrVersionConflict) {
		t.Fatalf("UpdateRetrying behind 5 racing writes, 2 attempts: %v, want ErrVersionConflict", err)
	}
	if raced != 2 {
		t.Fatalf("fn ran %d times, want 2", raced)
	}
}
