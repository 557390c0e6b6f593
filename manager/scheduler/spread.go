package scheduler

import "container/heap"

// spreadTree orders the eligible nodes of one service for placement: one
// level per spread preference, each a heap of groups (fewest replicas of
// the service first, then group value), and at the bottom a heap of nodes
// (fewest replicas of the service, then fewest tasks, then node id). Nodes
// without the preference's attribute form a group of their own.
//
// Placing a replica costs O(levels · log n); building the tree O(n).
type spreadTree struct {
	root *branch
}

// missingKey groups the nodes that lack a spread attribute; no label
// value can be equal to it.
const missingKey = "\x00missing"

type branch struct {
	key    string
	count  int // replicas of the service on the nodes below
	pos    int // index in the parent's heap
	groups *groupHeap
	nodes  *nodeHeap // bottom level only
	byKey  map[string]*branch
}

// held is how many tasks of the service hold a node anywhere; when none
// do, the per-node counts need not be looked up.
func newSpreadTree(p *needs, eligible []*nodeInfo, held int) *spreadTree {
	t := &spreadTree{root: newBranch("", len(p.spread) == 0)}
	for _, ni := range eligible {
		n := 0
		if held > 0 {
			n = ni.byService[p.serviceID]
		}
		b := t.root
		b.count += n
		for level, attr := range p.spread {
			key, ok := attr.Value(ni.node)
			if !ok {
				key = missingKey
			}
			child := b.byKey[key]
			if child == nil {
				child = newBranch(key, level == len(p.spread)-1)
				b.byKey[key] = child
				child.pos = len(b.groups.items)
				b.groups.items = append(b.groups.items, child)
			}
			child.count += n
			b = child
		}
		b.nodes.items = append(b.nodes.items, candidate{ni: ni, svc: n})
	}
	t.root.init()
	return t
}

func newBranch(key string, bottom bool) *branch {
	b := &branch{key: key}
	if bottom {
		b.nodes = &nodeHeap{}
	} else {
		b.groups = &groupHeap{}
		b.byKey = map[string]*branch{}
	}
	return b
}

func (b *branch) init() {
	if b.nodes != nil {
		heap.Init(b.nodes)
		return
	}
	for _, c := range b.groups.items {
		c.init()
	}
	heap.Init(b.groups)
	b.byKey = nil
}

func (b *branch) empty() bool {
	if b.nodes != nil {
		return len(b.nodes.items) == 0
	}
	return len(b.groups.items) == 0
}

// next returns the node the next replica should go to and the path of
// branches down to it, or nil when no node is left.
func (t *spreadTree) next(path []*branch) (*nodeInfo, []*branch) {
	path = append(path[:0], t.root)
	b := t.root
	for b.nodes == nil {
		if len(b.groups.items) == 0 {
			return nil, path
		}
		b = b.groups.items[0]
		path = append(path, b)
	}
	if len(b.nodes.items) == 0 {
		return nil, path
	}
	return b.nodes.items[0].ni, path
}

// placed records that a replica went to the node next returned (whose
// tallies the caller has already updated); room says whether the node can
// take another replica of the service.
func (t *spreadTree) placed(path []*branch, room bool) {
	leaf := path[len(path)-1]
	leaf.nodes.items[0].svc++
	if room {
		heap.Fix(leaf.nodes, 0)
	} else {
		heap.Pop(leaf.nodes)
	}
	for i := len(path) - 1; i >= 0; i-- {
		b := path[i]
		b.count++
		if i == 0 {
			break
		}
		parent := path[i-1].groups
		if b.empty() {
			heap.Remove(parent, b.pos)
		} else {
			heap.Fix(parent, b.pos)
		}
	}
}

type groupHeap struct{ items []*branch }

func (h *groupHeap) Len() int { return len(h.items) }
func (h *groupHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	if a.count != b.count {
		return a.count < b.count
	}
	return a.key < b.key
}
func (h *groupHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].pos, h.items[j].pos = i, j
}
func (h *groupHeap) Push(x any) {
	b := x.(*branch)
	b.pos = len(h.items)
	h.items = append(h.items, b)
}
func (h *groupHeap) Pop() any {
	last := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return last
}

// candidate is an eligible node with its count of the service's replicas,
// kept here so that heap comparisons need no map lookup.
type candidate struct {
	ni  *nodeInfo
	svc int
}

type nodeHeap struct{ items []candidate }

func (h *nodeHeap) Len() int { return len(h.items) }
func (h *nodeHeap) Less(i, j int) bool {
	a, b := &h.items[i], &h.items[j]
	if a.svc != b.svc {
		return a.svc < b.svc
	}
	if a.ni.tasks != b.ni.tasks {
		return a.ni.tasks < b.ni.tasks
	}
	return a.ni.id < b.ni.id
}
func (h *nodeHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *nodeHeap) Push(x any)    { h.items = append(h.items, x.(candidate)) }
func (h *nodeHeap) Pop() any {
	last := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return last
}
