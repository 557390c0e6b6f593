package raft

import (
	"runtime"
	"sync"
	"sync/atomic"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/api"
)

// aheadWindow is how many entries a worker of decodeAhead decodes at a
// time, and aheadWindows how many windows per worker may wait decoded for
// the applier: enough to keep every core busy, bounded so that a long log
// is not held decoded whole beside the store it replaces objects of.
const (
	aheadWindow  = 64
	aheadWindows = 4
)

// ahead decodes a replay's entries on every core while the caller applies
// them, in order, on its own (decodeAhead).
type ahead struct {
	ents    []raftpb.Entry
	windows []chan decodedWindow // one a window, each sent to once
	slots   chan struct{}        // windows decoded or being decoded, not yet applied
	next    atomic.Int64         // the next window to decode
	done    chan struct{}
	wg      sync.WaitGroup

	// The applier's side: the window it reads, and its index.
	cur  decodedWindow
	curW int
}

// decodedWindow is a window's requests, nil for an entry that is not a
// write; err is why the one at failed did not decode.
type decodedWindow struct {
	reqs   []*api.InternalRaftRequest
	failed int
	err    error
}

// decodeAhead starts decoding ents' requests. The decoding took a third
// of a restarted manager's replay of its log, which comes before it
// serves or leads (replayCommitted). The caller takes each entry's request
// with request, in order, and stops the workers with stop.
func decodeAhead(ents []raftpb.Entry) *ahead {
	workers := runtime.GOMAXPROCS(0)
	a := &ahead{
		ents:    ents,
		windows: make([]chan decodedWindow, (len(ents)+aheadWindow-1)/aheadWindow),
		slots:   make(chan struct{}, workers*aheadWindows),
		done:    make(chan struct{}),
		curW:    -1,
	}
	for i := range a.windows {
		a.windows[i] = make(chan decodedWindow, 1)
	}
	for range min(workers, len(a.windows)) {
		a.wg.Go(a.work)
	}
	return a
}

// work decodes windows in order of their index while slots are free. The
// window the applier waits for is taken before any after it, and the
// applier frees the slot of each window it is done with, so the slots held
// are for that window and those after it: it never waits for a window no
// worker can take.
func (a *ahead) work() {
	for {
		select {
		case a.slots <- struct{}{}:
		case <-a.done:
			return
		}
		w := int(a.next.Add(1) - 1)
		if w >= len(a.windows) {
			return
		}
		ents := a.ents[w*aheadWindow : min((w+1)*aheadWindow, len(a.ents))]
		d := decodedWindow{reqs: make([]*api.InternalRaftRequest, len(ents)), failed: len(ents)}
		for i, e := range ents {
			if e.Type != raftpb.EntryNormal || len(e.Data) == 0 {
				continue
			}
			if d.reqs[i], d.err = decodeRequest(e); d.err != nil {
				d.failed = i
				break
			}
		}
		a.windows[w] <- d
		select {
		case <-a.done:
			return
		default:
		}
	}
}

// request is entry i's request, decoded; nil for an entry that is not a
// write. Called for i = 0, 1, 2, … in turn.
func (a *ahead) request(i int) (*api.InternalRaftRequest, error) {
	if w := i / aheadWindow; w != a.curW {
		if a.curW >= 0 {
			<-a.slots // done with the window before
		}
		a.cur, a.curW = <-a.windows[w], w
	}
	at := i % aheadWindow
	if at == a.cur.failed {
		return nil, a.cur.err
	}
	return a.cur.reqs[at], nil
}

// stop ends the workers and waits for them.
func (a *ahead) stop() {
	close(a.done)
	a.wg.Wait()
}
