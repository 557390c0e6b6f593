package raft

import (
	"runtime"
	"sync"
	"sync/atomic"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/api"
)

// A worker of decodeAhead decodes a window of entries at a time: at most
// aheadWindow entries, and past aheadWindowBytes of entry data none more.
// aheadWindows windows per worker may wait decoded for the applier:
// enough to keep every core busy, bounded (a few MB decoded) so that a
// long log of large entries, such as the batches creating a service's
// tasks, is not held decoded beside the store it replaces objects of.
const (
	aheadWindow      = 64
	aheadWindowBytes = 256 << 10
	aheadWindows     = 4
)

// ahead decodes a replay's entries on every core while the caller applies
// them, in order, on its own (decodeAhead).
type ahead struct {
	ents    []raftpb.Entry
	starts  []int                // each window's first entry, and len(ents)
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
		ents:  ents,
		slots: make(chan struct{}, workers*aheadWindows),
		done:  make(chan struct{}),
		curW:  -1,
	}
	for i, bytes := 0, 0; i < len(ents); i++ {
		if i == 0 || i-a.starts[len(a.starts)-1] == aheadWindow || bytes >= aheadWindowBytes {
			a.starts = append(a.starts, i)
			bytes = 0
		}
		bytes += len(ents[i].Data)
	}
	a.starts = append(a.starts, len(ents))
	a.windows = make([]chan decodedWindow, len(a.starts)-1)
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
	var specs specShare // the tasks of this worker's windows share specs
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
		ents := a.ents[a.starts[w]:a.starts[w+1]]
		d := decodedWindow{reqs: make([]*api.InternalRaftRequest, len(ents)), failed: len(ents)}
		for i, e := range ents {
			if e.Type != raftpb.EntryNormal || len(e.Data) == 0 {
				continue
			}
			if d.reqs[i], d.err = specs.decodeRequest(e); d.err != nil {
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
	if a.curW < 0 || i >= a.starts[a.curW+1] {
		if a.curW >= 0 {
			<-a.slots // done with the window before
		}
		a.curW++
		a.cur = <-a.windows[a.curW]
	}
	at := i - a.starts[a.curW]
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
