package dispatcher

import (
	"sync"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

// taskHub routes the store's task events to the Assignments streams of
// the nodes they concern: one store watch for every stream. With a watch
// per stream, each task event ran through every node's filter, and at
// 5 000 nodes those filters, and the two goroutines of each watch, were
// most of what the leader did while it placed 100 000 replicas
// (docs/bench/largestore.md).
type taskHub struct {
	mu   sync.Mutex
	subs map[string]map[*taskFeed]struct{} // by node id; nil once the hub ended
}

// taskFeed is one stream's share of the hub: the events of its node, in
// apply order, queued without bound until the stream takes them.
type taskFeed struct {
	hub    *taskHub
	nodeID string
	// ready has a value while events wait or the feed ended.
	ready chan struct{}

	mu     sync.Mutex
	events []store.Event
	ended  bool
}

func newTaskHub() *taskHub {
	return &taskHub{subs: map[string]map[*taskFeed]struct{}{}}
}

// run routes events, the store's task events, until the watch ends (the
// term's context, or the store closed), then ends every feed. The watch
// is made before any stream can subscribe, so the hub is never behind a
// view a stream read.
func (h *taskHub) run(events <-chan store.Event) {
	for e := range events {
		h.route(e)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, feeds := range h.subs {
		for f := range feeds {
			f.end()
		}
	}
	h.subs = nil
}

// route gives e to the feeds of the node its task is on, and of the node
// it left; a reset to every feed.
func (h *taskHub) route(e store.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.Kind == store.EventReset {
		for _, feeds := range h.subs {
			for f := range feeds {
				f.push(e)
			}
		}
		return
	}
	var now, before string
	if t, ok := e.Object.(*api.Task); ok {
		now = t.GetNodeId()
	}
	if old, ok := e.Old.(*api.Task); ok {
		before = old.GetNodeId()
	}
	for f := range h.subs[now] {
		f.push(e)
	}
	if before != now {
		for f := range h.subs[before] {
			f.push(e)
		}
	}
}

// subscribe returns a feed of nodeID's task events, calls read with a view
// of the store, and returns the view's index: the feed holds every event
// of a later batch, and may hold some of the view's own.
// Subscribing before reading is what makes the feed miss nothing: the hub
// is never ahead of the store.
func (h *taskHub) subscribe(st *store.Store, nodeID string, read func(tx store.ReadTx)) (*taskFeed, uint64) {
	f := &taskFeed{hub: h, nodeID: nodeID, ready: make(chan struct{}, 1)}
	h.mu.Lock()
	if h.subs == nil {
		f.end()
	} else {
		if h.subs[nodeID] == nil {
			h.subs[nodeID] = map[*taskFeed]struct{}{}
		}
		h.subs[nodeID][f] = struct{}{}
	}
	h.mu.Unlock()
	var index uint64
	st.ViewWithIndex(func(tx store.ReadTx, i uint64) {
		read(tx)
		index = i
	})
	return f, index
}

// cancel stops routing to f.
func (f *taskFeed) cancel() {
	f.hub.mu.Lock()
	defer f.hub.mu.Unlock()
	if feeds := f.hub.subs[f.nodeID]; feeds != nil {
		delete(feeds, f)
		if len(feeds) == 0 {
			delete(f.hub.subs, f.nodeID)
		}
	}
}

func (f *taskFeed) push(e store.Event) {
	f.mu.Lock()
	f.events = append(f.events, e)
	f.mu.Unlock()
	f.signal()
}

func (f *taskFeed) end() {
	f.mu.Lock()
	f.ended = true
	f.mu.Unlock()
	f.signal()
}

func (f *taskFeed) signal() {
	select {
	case f.ready <- struct{}{}:
	default:
	}
}

// take returns the events queued since the last take, and whether the
// feed ended (the hub stopped: leadership lost, or the store closed). The
// caller drops those its view already holds (Index at or below the
// view's).
func (f *taskFeed) take() (events []store.Event, ended bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	events, f.events = f.events, nil
	return events, f.ended
}
