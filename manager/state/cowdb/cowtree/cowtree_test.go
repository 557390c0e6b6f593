package cowtree

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// kv is a value whose order is its key alone, so a replace is visible.
type kv struct{ k, v int }

func kvLess(a, b kv) bool { return a.k < b.k }

// key is how a lookup finds the value with key k.
func key(k int) func(kv) int { return func(x kv) int { return cmp.Compare(x.k, k) } }

// model is the set a tree must hold: its values in key order.
type model []kv

func (m model) put(x kv) (model, kv, bool) {
	i, found := slices.BinarySearchFunc(m, x, func(a, b kv) int { return a.k - b.k })
	if found {
		old := m[i]
		m = slices.Clone(m)
		m[i] = x
		return m, old, true
	}
	return slices.Insert(slices.Clone(m), i, x), kv{}, false
}

func (m model) del(k int) (model, kv, bool) {
	i, found := slices.BinarySearchFunc(m, kv{k: k}, func(a, b kv) int { return a.k - b.k })
	if !found {
		return m, kv{}, false
	}
	return slices.Delete(slices.Clone(m), i, i+1), m[i], true
}

// check fails unless t holds exactly m and keeps a B-tree's shape: keys
// in order, every leaf at one depth, each node's size within bounds.
func check(t *testing.T, tr *Tree[kv], m model) {
	t.Helper()
	var got model
	tr.Ascend(nil, func(x kv) bool { got = append(got, x); return true })
	if !slices.Equal(got, m) {
		t.Fatalf("tree holds %v, want %v", got, m)
	}
	if tr.Len() != len(m) {
		t.Fatalf("Len() = %d, want %d", tr.Len(), len(m))
	}
	if tr.root == nil {
		return
	}
	leafDepth := -1
	var walk func(n *node[kv], depth int, root bool)
	walk = func(n *node[kv], depth int, root bool) {
		if len(n.items) > tr.maxItems || (!root && len(n.items) < tr.minItems()) || len(n.items) == 0 {
			t.Fatalf("node of %d values, bounds %d..%d (root %v)", len(n.items), tr.minItems(), tr.maxItems, root)
		}
		if n.children == nil {
			if leafDepth >= 0 && depth != leafDepth {
				t.Fatalf("leaves at depths %d and %d", leafDepth, depth)
			}
			leafDepth = depth
			return
		}
		if len(n.children) != len(n.items)+1 {
			t.Fatalf("%d values, %d children", len(n.items), len(n.children))
		}
		for _, c := range n.children {
			walk(c, depth+1, false)
		}
	}
	walk(tr.root, 0, true)
}

// TestMatchesASortedSlice runs random inserts, replaces and deletes on
// trees of several degrees, cloning now and then, and checks every
// frozen clone still holds what it held when it was taken: writes to a
// copy never show in the tree it was copied from.
func TestMatchesASortedSlice(t *testing.T) {
	for _, degree := range []int{2, 3, 4, 32} {
		t.Run(fmt.Sprintf("degree=%d", degree), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(degree), 7))
			tr, m := New(degree, kvLess), model(nil)
			type frozen struct {
				tree *Tree[kv]
				m    model
			}
			var clones []frozen
			keys := 50 * degree * degree
			for step := range 20_000 {
				k := r.IntN(keys)
				switch op := r.IntN(10); {
				case op < 5:
					x := kv{k, step}
					old, replaced := tr.ReplaceOrInsert(x)
					var wantOld kv
					var want bool
					m, wantOld, want = m.put(x)
					if replaced != want || old != wantOld {
						t.Fatalf("step %d: ReplaceOrInsert(%v) = %v, %v; want %v, %v", step, x, old, replaced, wantOld, want)
					}
				case op < 9:
					old, ok := tr.Delete(key(k))
					var wantOld kv
					var want bool
					m, wantOld, want = m.del(k)
					if ok != want || old != wantOld {
						t.Fatalf("step %d: Delete(%d) = %v, %v; want %v, %v", step, k, old, ok, wantOld, want)
					}
				default:
					clones = append(clones, frozen{tr, m})
					tr = tr.Clone()
				}
				if step%500 == 0 {
					check(t, tr, m)
				}
			}
			check(t, tr, m)
			for _, c := range clones {
				check(t, c.tree, c.m)
			}
		})
	}
}

// TestGetAndAscend reads a tree built by random inserts: every key
// found or not as the model says, and an ascent from any pivot yields
// the model's values from it on, stopping when told.
func TestGetAndAscend(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	tr, m := New(3, kvLess), model(nil)
	for i := range 2_000 {
		x := kv{r.IntN(4_000) * 2, i} // even keys: odd pivots fall between
		tr.ReplaceOrInsert(x)
		m, _, _ = m.put(x)
	}
	for k := -1; k <= 8_001; k++ {
		got, ok := tr.Get(key(k))
		i, want := slices.BinarySearchFunc(m, kv{k: k}, func(a, b kv) int { return a.k - b.k })
		if ok != want || (ok && got != m[i]) {
			t.Fatalf("Get(%d) = %v, %v; want found %v", k, got, ok, want)
		}
		limit := r.IntN(5) + 1
		var seen model
		tr.Ascend(key(k), func(x kv) bool {
			seen = append(seen, x)
			return len(seen) < limit
		})
		if wantSeen := m[i:min(i+limit, len(m))]; !slices.Equal(seen, wantSeen) {
			t.Fatalf("ascent from %d, %d at most: %v, want %v", k, limit, seen, wantSeen)
		}
	}
}

// TestCopiesAreSizedToTheirNode checks what the package is for: a write
// to a clone copies each node on its path at its length plus one, not at
// the capacity the shared node grew to.
func TestCopiesAreSizedToTheirNode(t *testing.T) {
	tr := New(32, kvLess)
	for i := range 40 {
		tr.ReplaceOrInsert(kv{i * 2, 0}) // one leaf, grown by appends
	}
	if c := cap(tr.root.items); c <= 41 {
		t.Fatalf("setup: the leaf's capacity is %d, want it grown past 41", c)
	}
	c := tr.Clone()
	c.ReplaceOrInsert(kv{1, 0})
	if c.root == tr.root {
		t.Fatal("the clone's write changed the shared leaf")
	}
	if got := cap(c.root.items); got != 41 {
		t.Fatalf("the copied leaf has capacity %d, want 41 (40 values, one added)", got)
	}
	if tr.Len() != 40 || c.Len() != 41 {
		t.Fatalf("Len: original %d, clone %d; want 40 and 41", tr.Len(), c.Len())
	}
}
