package cowtree

import "slices"

// Writes restructure the tree on the way down, as the classic one-pass
// B-tree does: an insert splits every full node it is about to enter, a
// delete grows every minimal one, so neither ever walks back up. Every
// node changed is first made the tree's own (mutable).

// What a node gives up is cleared (slices.Delete does): its array stays,
// and the collector would keep what those slots point to alive.

// mutable returns n if t owns it, else a copy of n t owns: values and
// children as many as n holds, with room for one more (a write adds at
// most one to a node it copies, and nodes copied on a write's path are
// most of what a manager allocates under load).
func (t *Tree[T]) mutable(n *node[T]) *node[T] {
	if n.owner == t.owner {
		return n
	}
	c := &node[T]{owner: t.owner, items: make([]T, len(n.items), len(n.items)+1)}
	copy(c.items, n.items)
	if n.children != nil {
		c.children = make([]*node[T], len(n.children), len(n.children)+1)
		copy(c.children, n.children)
	}
	return c
}

// mutableChild makes n's i-th child t's own, in place, and returns it.
// n must be t's own.
func (t *Tree[T]) mutableChild(n *node[T], i int) *node[T] {
	c := t.mutable(n.children[i])
	n.children[i] = c
	return c
}

// ReplaceOrInsert puts x in t, in place of the value equivalent to it if
// any, which it returns.
func (t *Tree[T]) ReplaceOrInsert(x T) (T, bool) {
	if t.root == nil {
		t.root = &node[T]{owner: t.owner, items: append(make([]T, 0, 2), x)}
		t.n = 1
		var zero T
		return zero, false
	}
	t.root = t.mutable(t.root)
	if len(t.root.items) >= t.maxItems {
		mid, right := t.split(t.root, t.minItems())
		t.root = &node[T]{owner: t.owner, items: append(make([]T, 0, 2), mid), children: append(make([]*node[T], 0, 3), t.root, right)}
	}
	old, replaced := t.insert(t.root, x)
	if !replaced {
		t.n++
	}
	return old, replaced
}

// insert puts x in the subtree of n, which is t's own and not full.
func (t *Tree[T]) insert(n *node[T], x T) (T, bool) {
	for {
		i, found := t.find(n.items, x)
		if found {
			old := n.items[i]
			n.items[i] = x
			return old, true
		}
		if n.children == nil {
			n.items = slices.Insert(n.items, i, x)
			var zero T
			return zero, false
		}
		child := t.mutableChild(n, i)
		if len(child.items) >= t.maxItems {
			mid, right := t.split(child, t.minItems())
			n.items = slices.Insert(n.items, i, mid)
			n.children = slices.Insert(n.children, i+1, right)
			switch {
			case t.less(mid, x):
				child = right
			case !t.less(x, mid):
				old := n.items[i]
				n.items[i] = x
				return old, true
			}
		}
		n = child
	}
}

// split cuts n, t's own, at its value i: n keeps what precedes it, the
// value is returned with a new node holding what follows.
func (t *Tree[T]) split(n *node[T], i int) (T, *node[T]) {
	mid := n.items[i]
	right := &node[T]{owner: t.owner, items: make([]T, len(n.items)-i-1, len(n.items)-i)}
	copy(right.items, n.items[i+1:])
	n.items = slices.Delete(n.items, i, len(n.items))
	if n.children != nil {
		right.children = make([]*node[T], len(n.children)-i-1, len(n.children)-i)
		copy(right.children, n.children[i+1:])
		n.children = slices.Delete(n.children, i+1, len(n.children))
	}
	return mid, right
}

// removal is what remove takes out of a subtree.
type removal int

const (
	removeItem removal = iota // the value cmp matches
	removeMax                 // its last value
)

// Delete takes the value cmp finds (as for Get) out of t and returns it.
func (t *Tree[T]) Delete(cmp func(T) int) (T, bool) {
	var zero T
	if t.root == nil {
		return zero, false
	}
	t.root = t.mutable(t.root)
	old, ok := t.remove(t.root, cmp, removeItem)
	if len(t.root.items) == 0 {
		// The root's last value went down into a merge, or out.
		if t.root.children != nil {
			t.root = t.root.children[0]
		} else {
			t.root = nil
		}
	}
	if ok {
		t.n--
	}
	return old, ok
}

// remove takes what r says out of the subtree of n, t's own, which
// holds more than the fewest values a node may (or is the root).
func (t *Tree[T]) remove(n *node[T], cmp func(T) int, r removal) (T, bool) {
	for {
		var i int
		var found bool
		switch r {
		case removeMax:
			if n.children == nil {
				last := n.items[len(n.items)-1]
				n.items = slices.Delete(n.items, len(n.items)-1, len(n.items))
				return last, true
			}
			i = len(n.items)
		default:
			i, found = search(n.items, cmp)
			if n.children == nil {
				if !found {
					var zero T
					return zero, false
				}
				old := n.items[i]
				n.items = slices.Delete(n.items, i, i+1)
				return old, true
			}
		}
		if len(n.children[i].items) <= t.minItems() {
			// Too few to give one up: take one from a sibling or merge
			// with it, and look again, since what was at i has moved.
			t.grow(n, i)
			continue
		}
		child := t.mutableChild(n, i)
		if found {
			// The value is here, between two subtrees: its predecessor
			// takes its place.
			old := n.items[i]
			n.items[i], _ = t.remove(child, nil, removeMax)
			return old, true
		}
		n = child
	}
}

// grow gives n's i-th child, which holds the fewest values a node may,
// one more: from a sibling that can spare one, through n, or by merging
// it with a sibling and the value of n between them.
func (t *Tree[T]) grow(n *node[T], i int) {
	switch {
	case i > 0 && len(n.children[i-1].items) > t.minItems():
		child, left := t.mutableChild(n, i), t.mutableChild(n, i-1)
		child.items = slices.Insert(child.items, 0, n.items[i-1])
		n.items[i-1] = left.items[len(left.items)-1]
		left.items = slices.Delete(left.items, len(left.items)-1, len(left.items))
		if left.children != nil {
			child.children = slices.Insert(child.children, 0, left.children[len(left.children)-1])
			left.children = slices.Delete(left.children, len(left.children)-1, len(left.children))
		}
	case i < len(n.items) && len(n.children[i+1].items) > t.minItems():
		child, right := t.mutableChild(n, i), t.mutableChild(n, i+1)
		child.items = append(child.items, n.items[i])
		n.items[i] = right.items[0]
		right.items = slices.Delete(right.items, 0, 1)
		if right.children != nil {
			child.children = append(child.children, right.children[0])
			right.children = slices.Delete(right.children, 0, 1)
		}
	default:
		if i == len(n.items) {
			i-- // the last child merges with its left sibling
		}
		// The right sibling is only read: its values move into the left.
		left, right := t.mutableChild(n, i), n.children[i+1]
		left.items = append(append(left.items, n.items[i]), right.items...)
		if left.children != nil {
			left.children = append(left.children, right.children...)
		}
		n.items = slices.Delete(n.items, i, i+1)
		n.children = slices.Delete(n.children, i+1, i+2)
	}
}
