// Package connpool keeps one client connection per address.
//
// gRPC connections are lazy and multiplex every call, so one per peer is
// all a caller needs; the pool makes that one on first use and closes them
// all at once, when the identity they were opened with is no longer the
// caller's (a role change) or the caller stops, or those to addresses the
// caller no longer wants (Keep): a connection that failed goes on
// redialling its address for as long as it is open.
package connpool

import (
	"slices"
	"sync"

	"google.golang.org/grpc"
)

// Dial opens a connection to addr without blocking (grpc.NewClient).
type Dial func(addr string) (*grpc.ClientConn, error)

// Pool keeps one connection per address. The zero value is not usable:
// make one with New.
type Pool struct {
	dial  Dial
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

// New returns an empty pool that opens connections with dial.
func New(dial Dial) *Pool { return &Pool{dial: dial} }

// Get returns the connection to addr, opening it on first use.
func (p *Pool) Get(addr string) (*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if conn, ok := p.conns[addr]; ok {
		return conn, nil
	}
	conn, err := p.dial(addr)
	if err != nil {
		return nil, err
	}
	if p.conns == nil {
		p.conns = make(map[string]*grpc.ClientConn)
	}
	p.conns[addr] = conn
	return conn, nil
}

// Keep closes the connections to every address not in addrs (a manager
// that moved or left); the others stay.
func (p *Pool) Keep(addrs []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, conn := range p.conns {
		if !slices.Contains(addrs, addr) {
			conn.Close()
			delete(p.conns, addr)
		}
	}
}

// CloseAll closes every connection; the next Get opens a new one.
func (p *Pool) CloseAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, conn := range p.conns {
		conn.Close()
	}
	p.conns = nil
}
