package transport

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
)

// Transport sends raft messages to peers. See the package comment.
type Transport struct {
	cfg Config
	log *slog.Logger

	// ctx is cancelled by Stop; every RPC the transport makes derives
	// from it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the resolver and every peer's goroutine

	resolve chan uint64 // unknown destinations, for the resolver

	// removed: a peer refused this member as removed from the cluster.
	removed atomic.Bool

	mu      sync.Mutex
	peers   map[uint64]*peer
	stopped bool
}

// New returns a running transport with no peers.
func New(cfg Config) *Transport {
	cfg.setDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	t := &Transport{
		cfg:     cfg,
		log:     cfg.Logger.With("component", "raft-transport"),
		ctx:     ctx,
		cancel:  cancel,
		resolve: make(chan uint64, 64),
		peers:   make(map[uint64]*peer),
	}
	t.wg.Add(1)
	go t.runResolver()
	return t
}

// Send queues msgs for their destinations and returns at once. Messages
// that cannot be queued are dropped and reported (see the package comment).
func (t *Transport) Send(msgs []raftpb.Message) {
	var dropped []raftpb.Message
	t.mu.Lock()
	if t.stopped || t.removed.Load() {
		t.mu.Unlock()
		return
	}
	for _, m := range msgs {
		p, ok := t.peers[m.To]
		if !ok {
			t.requestResolve(m.To)
			dropped = append(dropped, m)
			continue
		}
		if !p.enqueue(m) {
			dropped = append(dropped, m)
		}
	}
	t.mu.Unlock()
	for _, m := range dropped {
		t.reportFailure(m)
	}
}

// reportFailure tells raft m was not delivered.
func (t *Transport) reportFailure(m raftpb.Message) {
	t.cfg.Raft.ReportUnreachable(m.To)
	if m.Type == raftpb.MsgSnap {
		t.cfg.Raft.ReportSnapshot(m.To, raft.SnapshotFailure)
	}
}

// AddPeer makes raft id reachable at addr. Adding a known id again is a
// no-op with the same address and an UpdatePeer with another.
func (t *Transport) AddPeer(id uint64, addr string) error {
	if cur, ok := t.PeerAddr(id); ok {
		if cur == addr {
			return nil
		}
		return t.UpdatePeer(id, addr)
	}
	conn, err := t.dial(id, addr)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		conn.Close()
		return ErrStopped
	}
	if p, ok := t.peers[id]; ok {
		// Added concurrently: keep that peer, with our address.
		p.setConn(addr, conn)
		return nil
	}
	p := newPeer(t, id, addr, conn)
	t.peers[id] = p
	t.wg.Add(2)
	go func() {
		defer t.wg.Done()
		p.run()
	}()
	go func() {
		defer t.wg.Done()
		p.watch()
	}()
	t.log.Info("raft peer added", "raft_id", hexID(id), "address", addr)
	return nil
}

// UpdatePeer moves a known peer to addr. Its queue and order are kept;
// a send in flight on the old connection fails and is reported.
func (t *Transport) UpdatePeer(id uint64, addr string) error {
	if _, ok := t.PeerAddr(id); !ok {
		return fmt.Errorf("update raft peer %s: %w", hexID(id), ErrUnknownPeer)
	}
	conn, err := t.dial(id, addr)
	if err != nil {
		return err
	}
	t.mu.Lock()
	p, ok := t.peers[id]
	t.mu.Unlock()
	if !ok {
		conn.Close()
		return fmt.Errorf("update raft peer %s: %w", hexID(id), ErrUnknownPeer)
	}
	p.setConn(addr, conn)
	t.log.Info("raft peer address updated", "raft_id", hexID(id), "address", addr)
	return nil
}

func (t *Transport) dial(id uint64, addr string) (*grpc.ClientConn, error) {
	conn, err := t.cfg.Dial(addr)
	if err != nil {
		return nil, fmt.Errorf("dial raft peer %s at %s: %w", hexID(id), addr, err)
	}
	return conn, nil
}

// RemovePeer forgets raft id: its goroutine is stopped and waited for,
// its connection closed, and messages still queued for it dropped.
func (t *Transport) RemovePeer(id uint64) {
	t.mu.Lock()
	p, ok := t.peers[id]
	delete(t.peers, id)
	t.mu.Unlock()
	if !ok {
		return
	}
	p.stop()
	t.log.Info("raft peer removed", "raft_id", hexID(id))
}

// PeerAddr returns the address of raft id, if it is a peer.
func (t *Transport) PeerAddr(id uint64) (string, bool) {
	t.mu.Lock()
	p, ok := t.peers[id]
	t.mu.Unlock()
	if !ok {
		return "", false
	}
	return p.address(), true
}

// Stop stops every goroutine the transport started, waits for them, and
// closes every connection. Send does nothing afterwards.
func (t *Transport) Stop() {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return
	}
	t.stopped = true
	peers := t.peers
	t.peers = make(map[uint64]*peer)
	t.mu.Unlock()

	t.cancel()
	for _, p := range peers {
		p.stop()
	}
	t.wg.Wait()
}

// memberRemoved records that a peer refused us as removed.
func (t *Transport) memberRemoved(by uint64) {
	if t.removed.Swap(true) {
		return
	}
	t.log.Warn("a raft peer refused this member as removed from the cluster; no longer sending raft messages", "refused_by", hexID(by))
	if t.cfg.OnRemoved != nil {
		t.cfg.OnRemoved()
	}
}

func hexID(id uint64) string { return fmt.Sprintf("%x", id) }
