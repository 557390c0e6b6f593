// Package cowtree is an ordered set of values held in a B-tree whose
// copies share nodes: Clone costs nothing, and a write to a copy copies
// only the nodes on its path, each exactly as long as it is (plus room
// for the one value an insert adds), not as long as the node it copies
// once grew (docs/design.md §7: under a steady stream of small writes
// the copies were most of what a manager allocated).
//
// Contract:
//   - A Tree belongs to one writer. Any number of goroutines may read a
//     tree nobody writes.
//   - Clone freezes the tree it copies: the original may still be read,
//     by any number of goroutines, but never written again (cowdb never
//     writes a committed version). Clone itself changes nothing, so
//     clones of one frozen tree may be taken concurrently.
//   - less is a strict weak order; values it finds equivalent are the
//     same member of the set.
package cowtree

// Tree is an ordered set of T. See the package contract.
type Tree[T any] struct {
	root *node[T]
	n    int
	less func(a, b T) bool
	// owner marks the nodes this tree alone holds, which it may change in
	// place; any other node is shared with a frozen tree and is copied
	// before it changes.
	owner    *owner
	maxItems int // 2*degree-1; a node other than the root holds degree-1 at least
}

// owner is a tree's identity: never compared but by address, so it must
// have a size (distinct zero-size allocations may share one).
type owner struct{ _ byte }

type node[T any] struct {
	owner    *owner
	items    []T
	children []*node[T] // nil in a leaf; else len(items)+1 of them
}

// New returns an empty tree ordered by less whose nodes hold from
// degree-1 to 2*degree-1 values (the root from one). degree must be at
// least 2.
func New[T any](degree int, less func(a, b T) bool) *Tree[T] {
	if degree < 2 {
		panic("cowtree: degree below 2")
	}
	return &Tree[T]{less: less, owner: new(owner), maxItems: 2*degree - 1}
}

// minItems is the fewest values a node other than the root holds, and
// what each half of a full node keeps when it splits.
func (t *Tree[T]) minItems() int { return t.maxItems / 2 }

// Len is the number of values in t.
func (t *Tree[T]) Len() int { return t.n }

// Clone returns a copy of t sharing all its nodes, and freezes t.
func (t *Tree[T]) Clone() *Tree[T] {
	c := *t
	c.owner = new(owner)
	return &c
}

// find returns the position of the first value of items not less than x,
// and whether that value is equivalent to x.
func (t *Tree[T]) find(items []T, x T) (int, bool) {
	lo, hi := 0, len(items)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if t.less(items[mid], x) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, lo < len(items) && !t.less(x, items[lo])
}

// search returns the position of the first value of items cmp (as for
// Get) does not place before the one sought, and whether cmp matched it.
// It is slices.BinarySearchFunc's loop written out: handed to that as
// its target, a lookup's cmp escaped to the heap (48 bytes a Get).
func search[T any](items []T, cmp func(T) int) (int, bool) {
	lo, hi := 0, len(items)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if cmp(items[mid]) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, lo < len(items) && cmp(items[lo]) == 0
}

// Get returns t's value cmp finds: the one for which it returns 0.
// cmp places a value against the one sought, as a key would: negative
// for a value before it, positive after. It must agree with t's order.
func (t *Tree[T]) Get(cmp func(T) int) (T, bool) {
	for n := t.root; n != nil; {
		i, found := search(n.items, cmp)
		if found {
			return n.items[i], true
		}
		if n.children == nil {
			break
		}
		n = n.children[i]
	}
	var zero T
	return zero, false
}

// Ascend calls fn with each value from the first for which cmp (as for
// Get) is not negative, or from the first of all when cmp is nil, in
// order, until fn returns false.
func (t *Tree[T]) Ascend(cmp func(T) int, fn func(T) bool) {
	if t.root != nil {
		t.ascend(t.root, cmp, fn)
	}
}

// ascend walks n's subtree in order, from the first value cmp does not
// place before the one sought (all of it when cmp is nil: every value
// there follows); false means fn stopped it.
func (t *Tree[T]) ascend(n *node[T], cmp func(T) int, fn func(T) bool) bool {
	i := 0
	if cmp != nil {
		i, _ = search(n.items, cmp)
	}
	// Only the first child walked can hold values before the one sought:
	// the ones after it follow n.items[i], which does not precede it.
	for first := true; i <= len(n.items); i, first = i+1, false {
		from := cmp
		if !first {
			from = nil
		}
		if n.children != nil && !t.ascend(n.children[i], from, fn) {
			return false
		}
		if i < len(n.items) && !fn(n.items[i]) {
			return false
		}
	}
	return true
}
