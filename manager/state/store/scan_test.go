package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/jaco-project/jaco/api"
)

// A listing pages through the store with Scan: resumed after the last id
// of each page, it must visit every matching object once, in id order,
// whatever index narrows it.
func TestScanResumesInIDOrder(t *testing.T) {
	s := newStore(t)
	rng := rand.New(rand.NewPCG(1, 2))
	var tasks []*api.Task
	var actions []*api.StoreAction
	services, nodes := []string{"s1", "s2", "s10"}, []string{"n1", "n2", ""}
	for i := range 60 {
		// Ids of different lengths, so "t1" < "t10" < "t2" is exercised.
		id := fmt.Sprintf("t%d", rng.IntN(100000))
		if slices.ContainsFunc(tasks, func(t *api.Task) bool { return t.Id == id }) {
			continue
		}
		tk := task(id, services[i%3], nodes[(i/3)%3], 1)
		tasks = append(tasks, tk)
		actions = append(actions, act(t, api.StoreAction_KIND_CREATE, tk))
	}
	for _, id := range []string{"n1", "n2", "n10"} {
		actions = append(actions, act(t, api.StoreAction_KIND_CREATE, node(id, "h-"+id, 0, 1)))
	}
	if err := s.Apply(1, req(actions...)); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ service, node string }{
		{"", ""}, {"s1", ""}, {"s10", ""}, {"", "n1"}, {"s2", "n2"}, {"s1", "nope"},
	} {
		var want []string
		for _, tk := range tasks {
			if (f.service == "" || tk.ServiceId == f.service) && (f.node == "" || tk.NodeId == f.node) {
				want = append(want, tk.Id)
			}
		}
		slices.Sort(want)
		got := pages(s, 7, func(tx ReadTx, after string, fn func(string) bool) {
			tx.ScanTasks(after, f.service, f.node, func(t *api.Task) bool { return fn(t.Id) })
		})
		if !slices.Equal(got, want) {
			t.Errorf("tasks of service %q node %q: got %v, want %v", f.service, f.node, got, want)
		}
	}
	got := pages(s, 2, func(tx ReadTx, after string, fn func(string) bool) {
		tx.ScanNodes(after, func(n *api.Node) bool { return fn(n.Id) })
	})
	if want := []string{"n1", "n10", "n2"}; !slices.Equal(got, want) {
		t.Errorf("nodes: got %v, want %v", got, want)
	}
}

// pages lists ids with scan, size at a time, each page in its own view.
func pages(s *Store, size int, scan func(tx ReadTx, after string, fn func(string) bool)) []string {
	var all []string
	after := ""
	for {
		var page []string
		s.View(func(tx ReadTx) {
			scan(tx, after, func(id string) bool {
				page = append(page, id)
				return len(page) < size
			})
		})
		all = append(all, page...)
		if len(page) < size {
			return all
		}
		after = page[len(page)-1]
	}
}

func TestScanHandsOutClones(t *testing.T) {
	s := newStore(t)
	if err := s.Apply(1, req(act(t, api.StoreAction_KIND_CREATE, service("a", "web", 1)))); err != nil {
		t.Fatal(err)
	}
	s.View(func(tx ReadTx) {
		tx.ScanServices("", func(svc *api.Service) bool { svc.Spec.Name = "changed"; return true })
	})
	s.View(func(tx ReadTx) {
		if name := tx.GetService("a").Spec.Name; name != "web" {
			t.Fatalf("a scan's change reached the store: name %q", name)
		}
	})
}

// EachNode hands out the stored nodes themselves, in id order, and stops
// when fn says so.
func TestEachNodeShared(t *testing.T) {
	s := newStore(t)
	var actions []*api.StoreAction
	for _, id := range []string{"n2", "n10", "n1"} {
		actions = append(actions, act(t, api.StoreAction_KIND_CREATE, node(id, "h-"+id, 0, 1)))
	}
	if err := s.Apply(1, req(actions...)); err != nil {
		t.Fatal(err)
	}
	s.View(func(r ReadTx) {
		var ids []string
		r.EachNode(func(n *api.Node) bool {
			ids = append(ids, n.GetId())
			if r.GetNode(n.GetId()) == n {
				t.Error("GetNode returned the stored node, not a copy")
			}
			return len(ids) < 2
		})
		if !slices.Equal(ids, []string{"n1", "n10"}) {
			t.Errorf("EachNode visited %v, want n1, n10 then stop", ids)
		}
		var shared *api.Node
		r.EachNode(func(n *api.Node) bool { shared = n; return false })
		var again *api.Node
		r.EachNode(func(n *api.Node) bool { again = n; return false })
		if shared != again {
			t.Error("EachNode hands out copies, not the stored node")
		}
	})
}

// A join token is found by its hash, and only by the whole of it.
func TestFindJoinTokenByHash(t *testing.T) {
	s := newStore(t)
	var actions []*api.StoreAction
	for _, id := range []string{"j1", "j2", "j3"} {
		actions = append(actions, act(t, api.StoreAction_KIND_CREATE,
			&api.JoinToken{Id: id, Hash: []byte("hash-" + id), Meta: meta(0, 1, 1)}))
	}
	actions = append(actions, act(t, api.StoreAction_KIND_CREATE, &api.JoinToken{Id: "nohash", Meta: meta(0, 1, 1)}))
	if err := s.Apply(1, req(actions...)); err != nil {
		t.Fatal(err)
	}
	s.View(func(r ReadTx) {
		if got := r.FindJoinTokenByHash([]byte("hash-j2")); got.GetId() != "j2" {
			t.Errorf("by j2's hash: %v", got)
		}
		for _, h := range []string{"hash-j", "hash-j22", ""} {
			if got := r.FindJoinTokenByHash([]byte(h)); got != nil {
				t.Errorf("by hash %q: %v, want none", h, got)
			}
		}
	})
}
