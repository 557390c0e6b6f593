package raft

import (
	"sync"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/jaco-project/jaco/api"
)

// proposed holds the requests this member proposed and still waits for,
// by id: applying the entry of one takes the request from here instead
// of decoding it again from the entry the proposal encoded it into. On
// the leader, whose every write is its own proposal, decoding took 3.5 %
// of its CPU at 12 000 writes/s, and made a second copy of each object
// for the collector (docs/adr/0054).
//
// A request's objects are the proposer's own (the store copies what a Tx
// records) and nothing changes them between the proposal's encoding and
// its apply, so they hold what the entry holds, as every other member
// decodes it.
type proposed struct {
	mu sync.Mutex
	m  map[uint64]*api.InternalRaftRequest
}

func newProposed() *proposed {
	return &proposed{m: make(map[uint64]*api.InternalRaftRequest)}
}

// add keeps req until its entry is applied. A request with id 0 is not
// kept: its encoding holds no id (proto3 leaves zeros out), so no entry
// could be told to be it.
func (p *proposed) add(req *api.InternalRaftRequest) {
	if req.GetId() == 0 {
		return
	}
	p.mu.Lock()
	p.m[req.GetId()] = req
	p.mu.Unlock()
}

// take returns the request with id and forgets it (none for id 0, which
// add never keeps).
func (p *proposed) take(id uint64) (*api.InternalRaftRequest, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	req, ok := p.m[id]
	if ok {
		delete(p.m, id)
	}
	return req, ok
}

// forget drops the request with id: its proposer stopped waiting (an
// entry of it still applied later is decoded).
func (p *proposed) forget(id uint64) {
	p.mu.Lock()
	delete(p.m, id)
	p.mu.Unlock()
}

// requestID reads an encoded InternalRaftRequest's id, its first field as
// proto.Marshal writes fields in number order; 0 when data does not start
// with it, and the entry is decoded.
func requestID(data []byte) uint64 {
	num, typ, n := protowire.ConsumeTag(data)
	if n < 0 || num != 1 || typ != protowire.VarintType {
		return 0
	}
	id, m := protowire.ConsumeVarint(data[n:])
	if m < 0 {
		return 0
	}
	return id
}
