package store

import (
	"errors"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

const (
	create = api.StoreAction_KIND_CREATE
	update = api.StoreAction_KIND_UPDATE
	del    = api.StoreAction_KIND_DELETE
)

// seeded returns a store holding, at index 1: nodes n1 (h1, raft id 7) and
// n2 (h2), service s1 (web) and task t1 of s1 on n1.
func seeded(t *testing.T) *Store {
	s := newStore(t)
	err := s.Apply(1, req(
		act(t, create, node("n1", "h1", 7, 0)),
		act(t, create, node("n2", "h2", 0, 0)),
		act(t, create, service("s1", "web", 0)),
		act(t, create, task("t1", "s1", "n1", 0)),
	))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestApply(t *testing.T) {
	renamed := node("n1", "h3", 7, 1)
	renamed.Meta = meta(1, 99, 50) // a proposer cannot move created_at

	tests := []struct {
		name    string
		actions func(t *testing.T) []*api.StoreAction
		wantErr error
		check   func(t *testing.T, tx ReadTx)
	}{{
		name: "create",
		actions: func(t *testing.T) []*api.StoreAction {
			return []*api.StoreAction{act(t, create, task("t2", "s1", "n2", 0))}
		},
		check: func(t *testing.T, tx ReadTx) {
			got := tx.GetTask("t2")
			want := task("t2", "s1", "n2", 2)
			if !proto.Equal(got, want) {
				t.Errorf("task t2 = %v, want %v", got, want)
			}
			if n := len(tx.ListTasksByNode("n2")); n != 1 {
				t.Errorf("%d tasks on n2, want 1", n)
			}
		},
	}, {
		// Equal times share one message (shareEqualTimes); unequal ones
		// stay as proposed.
		name: "create keeps an updated_at unlike its created_at",
		actions: func(t *testing.T) []*api.StoreAction {
			late := task("t2", "s1", "n2", 0)
			late.Meta = meta(0, 10, 20)
			return []*api.StoreAction{act(t, create, late)}
		},
		check: func(t *testing.T, tx ReadTx) {
			if got := tx.GetTask("t2").GetMeta(); !proto.Equal(got, meta(2, 10, 20)) {
				t.Errorf("meta %v, want version 2, created 10, updated 20", got)
			}
		},
	}, {
		name: "update keeps created_at, moves a unique index",
		actions: func(t *testing.T) []*api.StoreAction {
			return []*api.StoreAction{act(t, update, renamed)}
		},
		check: func(t *testing.T, tx ReadTx) {
			want := node("n1", "h3", 7, 0)
			want.Meta = meta(2, 10, 50)
			if got := tx.FindNodeByHostname("h3"); !proto.Equal(got, want) {
				t.Errorf("node by h3 = %v, want %v", got, want)
			}
			if got := tx.FindNodeByHostname("h1"); got != nil {
				t.Errorf("h1 still finds %v", got)
			}
			if got := tx.FindNodeByRaftID(7); got.GetId() != "n1" {
				t.Errorf("raft id 7 finds %v", got)
			}
		},
	}, {
		name: "delete",
		actions: func(t *testing.T) []*api.StoreAction {
			return []*api.StoreAction{act(t, del, &api.Task{Id: "t1", Meta: &api.Meta{Version: 1}})}
		},
		check: func(t *testing.T, tx ReadTx) {
			if got := tx.GetTask("t1"); got != nil {
				t.Errorf("deleted task still there: %v", got)
			}
			if got := tx.ListTasksByService("s1"); len(got) != 0 {
				t.Errorf("service index still lists %v", got)
			}
		},
	}, {
		name: "create then update then delete in one batch",
		actions: func(t *testing.T) []*api.StoreAction {
			return []*api.StoreAction{
				act(t, create, task("t2", "s1", "", 0)),
				act(t, update, task("t2", "s1", "n1", 0)),
				act(t, create, task("t3", "s1", "", 0)),
				act(t, update, task("t3", "s1", "n2", 0)),
				act(t, del, task("t3", "", "", 0)),
			}
		},
		check: func(t *testing.T, tx ReadTx) {
			if got := tx.GetTask("t2"); got.GetNodeId() != "n1" || got.GetMeta().GetVersion() != 2 {
				t.Errorf("task t2 = %v, want on n1 at version 2", got)
			}
			if got := tx.GetTask("t3"); got != nil {
				t.Errorf("task t3 = %v, want deleted", got)
			}
		},
	}, {
		name: "swap hostnames in one batch",
		actions: func(t *testing.T) []*api.StoreAction {
			return []*api.StoreAction{
				act(t, update, node("n1", "tmp", 7, 1)),
				act(t, update, node("n2", "h1", 0, 1)),
				act(t, update, node("n1", "h2", 7, 1)),
			}
		},
		check: func(t *testing.T, tx ReadTx) {
			if tx.FindNodeByHostname("h1").GetId() != "n2" || tx.FindNodeByHostname("h2").GetId() != "n1" {
				t.Errorf("hostnames not swapped: %v", tx.ListNodes())
			}
		},
	}, {
		name:    "create duplicate id",
		actions: one(create, task("t1", "s1", "", 0)),
		wantErr: ErrExists,
	}, {
		// The insert finds the id taken: the stored task must keep its
		// place in the service and node indexes, the newcomer get none.
		name: "create duplicate id after a create, with other index values",
		actions: func(t *testing.T) []*api.StoreAction {
			return []*api.StoreAction{
				act(t, create, task("t2", "s2", "n2", 0)),
				act(t, create, task("t1", "s2", "n3", 0)),
			}
		},
		wantErr: ErrExists,
		check: func(t *testing.T, tx ReadTx) {
			if got := tx.ListTasksByService("s1"); len(got) != 1 || got[0].GetId() != "t1" {
				t.Errorf("service s1 lists %v, want t1", got)
			}
			if got := tx.ListTasksByNode("n1"); len(got) != 1 || got[0].GetId() != "t1" {
				t.Errorf("node n1 lists %v, want t1", got)
			}
			for _, lookup := range [][]*api.Task{tx.ListTasksByService("s2"), tx.ListTasksByNode("n2"), tx.ListTasksByNode("n3")} {
				if len(lookup) != 0 {
					t.Errorf("a refused create left %v in an index", lookup)
				}
			}
		},
	}, {
		name:    "create duplicate hostname",
		actions: one(create, node("n3", "h1", 0, 0)),
		wantErr: ErrExists,
	}, {
		name:    "create duplicate service name",
		actions: one(create, service("s2", "web", 0)),
		wantErr: ErrExists,
	}, {
		name:    "update to a hostname another node holds",
		actions: one(update, node("n1", "h2", 7, 1)),
		wantErr: ErrExists,
	}, {
		name:    "update with a stale version",
		actions: one(update, task("t1", "s1", "n2", 0)),
		wantErr: ErrVersionConflict,
	}, {
		name:    "update missing",
		actions: one(update, task("t9", "s1", "n2", 1)),
		wantErr: ErrNotFound,
	}, {
		name:    "delete with a stale version",
		actions: one(del, task("t1", "", "", 5)),
		wantErr: ErrVersionConflict,
	}, {
		name:    "delete missing",
		actions: one(del, task("t9", "", "", 1)),
		wantErr: ErrNotFound,
	}, {
		name:    "empty id",
		actions: one(create, task("", "s1", "", 0)),
		wantErr: ErrInvalid,
	}, {
		name:    "no kind",
		actions: one(api.StoreAction_KIND_UNSPECIFIED, task("t2", "s1", "", 0)),
		wantErr: ErrInvalid,
	}, {
		name: "no target",
		actions: func(*testing.T) []*api.StoreAction {
			return []*api.StoreAction{{Kind: create}}
		},
		wantErr: ErrInvalid,
	}, {
		name: "second action fails: first is not applied",
		actions: func(t *testing.T) []*api.StoreAction {
			return []*api.StoreAction{
				act(t, create, task("t2", "s1", "", 0)),
				act(t, update, task("t1", "s1", "n2", 0)),
			}
		},
		wantErr: ErrVersionConflict,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := seeded(t)
			before := saved(t, s)
			err := s.Apply(2, req(tc.actions(t)...))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Apply = %v, want %v", err, tc.wantErr)
			}
			if got := s.AppliedIndex(); got != 2 {
				t.Errorf("AppliedIndex = %d, want 2", got)
			}
			if tc.wantErr != nil {
				if string(saved(t, s)) != string(before) {
					t.Errorf("refused batch changed the store: %v", s.Save())
				}
			}
			if tc.check != nil {
				s.View(func(tx ReadTx) { tc.check(t, tx) })
			}
		})
	}
}

// one is a batch of a single action.
func one(kind api.StoreAction_Kind, obj Object) func(t *testing.T) []*api.StoreAction {
	return func(t *testing.T) []*api.StoreAction { return []*api.StoreAction{act(t, kind, obj)} }
}

// TestReadsAreCopies: what a read returns can be changed without
// changing the store.
func TestReadsAreCopies(t *testing.T) {
	s := newStore(t)
	if err := s.Apply(1, req(act(t, create, node("n1", "h1", 0, 0)))); err != nil {
		t.Fatal(err)
	}
	s.View(func(tx ReadTx) {
		got := tx.GetNode("n1")
		got.Hostname = "changed"
		if tx.GetNode("n1").GetHostname() != "h1" {
			t.Error("stored node follows a read copy")
		}
	})
}

func TestClusterIsTheOneClusterObject(t *testing.T) {
	s := newStore(t)
	s.View(func(tx ReadTx) {
		if c := tx.Cluster(); c != nil {
			t.Errorf("Cluster() before ClusterInit = %v, want nil", c)
		}
	})
	if err := s.Apply(1, req(act(t, create, &api.Cluster{Id: "c1", CaCertPem: []byte("ca")}))); err != nil {
		t.Fatal(err)
	}
	s.View(func(tx ReadTx) {
		if c := tx.Cluster(); c.GetId() != "c1" || string(c.GetCaCertPem()) != "ca" {
			t.Errorf("Cluster() = %v, want c1", c)
		}
	})
}

// TestSharedTaskReads: EachTask visits the stored tasks of a service, of a
// node, or all, in id order, and stops when told; the shallow list is the
// service's tasks, whose own fields the reader may set without the store
// seeing it.
func TestSharedTaskReads(t *testing.T) {
	s := newStore(t)
	if err := s.Apply(1, req(
		act(t, create, task("t3", "s1", "n1", 0)),
		act(t, create, task("t1", "s1", "n2", 0)),
		act(t, create, task("t2", "s2", "n1", 0)),
	)); err != nil {
		t.Fatal(err)
	}
	ids := func(serviceID, nodeID string, limit int) []string {
		var out []string
		s.View(func(tx ReadTx) {
			tx.EachTask(serviceID, nodeID, func(t *api.Task) bool {
				out = append(out, t.GetId())
				return len(out) < limit
			})
		})
		return out
	}
	for _, c := range []struct {
		service, node string
		limit         int
		want          []string
	}{
		{"", "", 10, []string{"t1", "t2", "t3"}},
		{"s1", "", 10, []string{"t1", "t3"}},
		{"", "n1", 10, []string{"t2", "t3"}},
		{"", "", 2, []string{"t1", "t2"}},
		{"s3", "", 10, nil},
	} {
		if got := ids(c.service, c.node, c.limit); !slices.Equal(got, c.want) {
			t.Errorf("EachTask(%q, %q) up to %d = %v, want %v", c.service, c.node, c.limit, got, c.want)
		}
	}
	s.View(func(tx ReadTx) {
		got := tx.ListTasksByServiceShallow("s1")
		if len(got) != 2 || got[0].GetId() != "t1" || got[1].GetId() != "t3" {
			t.Fatalf("ListTasksByServiceShallow(s1) = %v, want t1, t3", got)
		}
		got[0].DesiredState = api.TaskState_TASK_STATE_SHUTDOWN
		got[0].NodeId = "elsewhere"
		if st := tx.GetTask("t1"); st.GetDesiredState() == api.TaskState_TASK_STATE_SHUTDOWN || st.GetNodeId() != "n2" {
			t.Errorf("stored task follows a shallow copy: %v", st)
		}
	})
}

// TestTasksShareSpecs: stored tasks of a service running equal specs hold
// one copy, after Apply and after Restore; a different spec keeps its
// own; a read is a copy whose spec can change without another task's.
func TestTasksShareSpecs(t *testing.T) {
	withSpec := func(id string, version uint64, image string) *api.Task {
		tk := task(id, "s1", "", 0)
		tk.SpecVersion, tk.Spec = version, &api.ServiceSpec{Name: "web", Image: image, Env: []string{"A=1"}}
		return tk
	}
	specOf := func(s *Store) map[string]*api.ServiceSpec {
		out := map[string]*api.ServiceSpec{}
		s.View(func(tx ReadTx) {
			tx.EachTask("", "", func(t *api.Task) bool {
				out[t.GetId()] = t.GetSpec()
				return true
			})
		})
		return out
	}
	check := func(s *Store) {
		t.Helper()
		got := specOf(s)
		if got["t1"] != got["t2"] || got["t1"] != got["t3"] {
			t.Error("tasks with equal specs hold separate copies")
		}
		if got["t4"] == got["t1"] || got["t4"].GetImage() != "web:2" {
			t.Errorf("a task of another spec version shares t1's spec: %v", got["t4"])
		}
		if got["t5"] == got["t1"] || got["t5"].GetImage() != "other" {
			t.Errorf("a task with a different spec shares t1's: %v", got["t5"])
		}
	}
	s := newStore(t)
	if err := s.Apply(1, req(act(t, create, withSpec("t1", 1, "web:1")), act(t, create, withSpec("t2", 1, "web:1")))); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(2, req(act(t, create, withSpec("t3", 1, "web:1")), act(t, create, withSpec("t4", 2, "web:2")),
		act(t, create, withSpec("t5", 1, "other")))); err != nil {
		t.Fatal(err)
	}
	check(s)
	s.View(func(tx ReadTx) {
		read := tx.GetTask("t1")
		read.Spec.Image = "changed"
		if tx.GetTask("t2").GetSpec().GetImage() != "web:1" {
			t.Error("changing a read task's spec changed another stored task")
		}
	})

	restored := newStore(t)
	if err := restored.Restore(s.Save(), 2); err != nil {
		t.Fatal(err)
	}
	check(restored)
}

// TestHeldBatches: batches applied with ApplyHeld are seen together at
// Publish, and a batch refused among them takes back its own writes only,
// including a write another batch held before it had made: the same
// content as applying and publishing each batch alone.
func TestHeldBatches(t *testing.T) {
	batches := func(t *testing.T) []*api.InternalRaftRequest {
		return []*api.InternalRaftRequest{
			req(act(t, create, task("t2", "s1", "n2", 0))),
			// Refused at its third action: the first two, on t2 held just
			// before and on t1, must be taken back.
			req(act(t, update, task("t2", "s1", "n1", 2)),
				act(t, del, task("t1", "s1", "n1", 1)),
				act(t, create, node("n3", "h1", 0, 0))),
			req(act(t, create, task("t3", "s1", "", 0))),
		}
	}
	held, alone := seeded(t), seeded(t)
	events := held.Watch(t.Context())
	for i, r := range batches(t) {
		err := held.ApplyHeld(uint64(i+2), r)
		if wantRefused := i == 1; wantRefused != errors.Is(err, ErrExists) {
			t.Fatalf("batch %d: ApplyHeld = %v", i, err)
		}
	}
	held.View(func(tx ReadTx) {
		if tx.GetTask("t2") != nil || held.AppliedIndex() != 1 {
			t.Errorf("held batches seen before Publish: t2 %v, applied index %d", tx.GetTask("t2"), held.AppliedIndex())
		}
	})
	held.Publish()
	for i, r := range batches(t) {
		_ = alone.Apply(uint64(i+2), r)
	}
	sameContent(t, held, alone)
	if got := held.AppliedIndex(); got != 4 {
		t.Errorf("applied index %d after Publish, want 4", got)
	}
	held.View(func(tx ReadTx) {
		if tx.GetTask("t1") == nil || tx.GetTask("t2").GetNodeId() != "n2" || tx.GetTask("t3") == nil {
			t.Errorf("after Publish: t1 %v, t2 %v, t3 %v", tx.GetTask("t1"), tx.GetTask("t2"), tx.GetTask("t3"))
		}
	})
	var got []string
	for range 2 {
		e := <-events
		got = append(got, e.Kind.String()+" "+e.Object.GetId())
	}
	if want := []string{"create t2", "create t3"}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}
