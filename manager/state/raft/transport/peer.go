package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// peer is one member messages are sent to: a bounded queue drained in
// order by one goroutine (run) over one connection.
type peer struct {
	t     *Transport
	id    uint64
	log   *slog.Logger
	queue chan raftpb.Message

	// ctx is cancelled by stop (and by Transport.Stop); it aborts the
	// send in flight.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns
	// watched is closed when watch returns.
	watched chan struct{}

	mu     sync.Mutex
	addr   string
	conn   *grpc.ClientConn
	closed bool

	// unreachable is owned by run; it turns per-message failures into one
	// log line per outage.
	unreachable bool
	// held is a message gather took from the queue that could not join the
	// batch it was building; it leads the next one. Owned by run.
	held *raftpb.Message
	// stream is the open RaftMessages stream, nil until a batch needs
	// one and after it failed. Owned by run.
	stream *msgStream
	// unary: the peer does not serve RaftMessages (a manager of an
	// earlier version, during an upgrade); each batch is a
	// ProcessRaftMessage call. Owned by run.
	unary bool
}

func newPeer(t *Transport, id uint64, addr string, conn *grpc.ClientConn) *peer {
	ctx, cancel := context.WithCancel(t.ctx)
	return &peer{
		t:       t,
		id:      id,
		log:     t.log.With("raft_id", hexID(id)),
		queue:   make(chan raftpb.Message, t.cfg.QueueSize),
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
		watched: make(chan struct{}),
		addr:    addr,
		conn:    conn,
	}
}

// enqueue queues m unless the queue is full.
func (p *peer) enqueue(m raftpb.Message) bool {
	select {
	case p.queue <- m:
		return true
	default:
		return false
	}
}

func (p *peer) address() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr
}

func (p *peer) connection() *grpc.ClientConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conn
}

// setConn moves the peer to addr over conn and closes the old connection.
func (p *peer) setConn(addr string, conn *grpc.ClientConn) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		conn.Close() // stopped meanwhile: nobody will use it
		return
	}
	old := p.conn
	p.addr, p.conn = addr, conn
	p.mu.Unlock()
	if old != conn {
		old.Close()
	}
}

// stop ends run, waits for it, and closes the connection. Messages still
// queued are dropped.
func (p *peer) stop() {
	p.cancel()
	<-p.done
	<-p.watched
	p.mu.Lock()
	conn := p.conn
	p.conn, p.closed = nil, true
	p.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
}

// watch calls Config.OnPeerLost each time the peer's connection, having
// been ready, breaks: its process ended (the kernel closed its sockets) or
// the network between us failed. A connection replaced by setConn or
// closed by stop is not a loss. It returns when the peer stops.
func (p *peer) watch() {
	defer close(p.watched)
	if p.t.cfg.OnPeerLost == nil {
		return
	}
	for {
		conn := p.connection()
		if conn == nil {
			return
		}
		was := conn.GetState()
		if !conn.WaitForStateChange(p.ctx, was) {
			return // stopping
		}
		if was == connectivity.Ready && conn.GetState() != connectivity.Shutdown && p.connection() == conn {
			p.log.Info("connection to raft peer lost")
			p.t.cfg.OnPeerLost(p.id)
		}
	}
}

func (p *peer) run() {
	defer close(p.done)
	defer p.closeStream()
	for {
		var m raftpb.Message
		if p.held != nil {
			m, p.held = *p.held, nil
		} else {
			select {
			case <-p.ctx.Done():
				return
			case <-p.streamEnded():
				p.streamEnd()
				continue
			case m = <-p.queue:
			}
		}
		if p.t.removed.Load() {
			continue // refused as removed: nothing more goes out
		}
		if b := p.gather(m); len(b.encoded) > 0 {
			p.deliver(b)
		}
	}
}

// batch is the encodings of messages for one call, in queue order. Of
// the messages themselves it keeps what reporting the outcome takes: the
// first one's type, for errors, and the snapshots, whose end raft hears
// of. Keeping every message cost the leader 2.5 KB a write in copies of
// raftpb.Message at 8 000 writes/s.
type batch struct {
	encoded [][]byte
	size    int
	first   raftpb.MessageType
	snaps   []raftpb.Message
}

// gather builds the batch led by first: it adds whatever is already queued
// behind it while the encodings fit in one call. One call per message
// would cap a peer at one round trip per message; raft's messages to a
// follower pile up faster than that under load. A message too large for a
// call travels alone, streamed.
func (p *peer) gather(first raftpb.Message) batch {
	var b batch
	// add reports whether more may follow m into the batch.
	add := func(m raftpb.Message) bool {
		enc, err := m.Marshal()
		if err != nil {
			// Raft's own messages always encode; should one not, it is
			// lost like a dropped packet, and raft resends.
			p.log.Error("encode raft message", "type", m.Type.String(), "err", err)
			return true
		}
		if len(b.encoded) > 0 && (b.size+len(enc) > p.t.cfg.MaxUnarySize || len(enc) > p.t.cfg.MaxUnarySize) {
			p.held = &m
			return false
		}
		if len(b.encoded) == 0 {
			b.first = m.Type
		}
		if m.Type == raftpb.MsgSnap {
			b.snaps = append(b.snaps, m)
		}
		b.encoded, b.size = append(b.encoded, enc), b.size+len(enc)
		return b.size <= p.t.cfg.MaxUnarySize
	}
	for more := add(first); more; {
		select {
		case m := <-p.queue:
			more = add(m)
		default:
			return b
		}
	}
	return b
}

// streamEnded is closed when the open stream ended by itself (the peer
// refused a message, or the connection broke); nil when none is open.
func (p *peer) streamEnded() <-chan struct{} {
	if p.stream == nil {
		return nil
	}
	return p.stream.ended
}

// streamEnd handles the end of the open stream, which the peer or the
// connection brought: what it carried is lost, and raft resends.
func (p *peer) streamEnd() {
	s := p.stream
	p.closeStream()
	if s.conn != p.connection() {
		return // the end of a connection setConn replaced
	}
	if !p.noteUnserved(s.err) {
		p.failed(batch{}, s.err)
	}
}

func (p *peer) closeStream() {
	if p.stream != nil {
		p.stream.close()
		p.stream = nil
	}
}

// deliver sends b and reports the outcome to raft.
func (p *peer) deliver(b batch) {
	err := p.send(b)
	if err == nil {
		p.delivered(b)
		return
	}
	p.failed(b, err)
}

// delivered reports b sent: its snapshots finished, the peer reachable.
func (p *peer) delivered(b batch) {
	for _, m := range b.snaps {
		p.t.cfg.Raft.ReportSnapshot(m.To, raft.SnapshotFinish)
		p.log.Info("raft snapshot sent", "index", m.Snapshot.Metadata.Index, "bytes", len(m.Snapshot.Data))
	}
	if p.unreachable {
		p.unreachable = false
		p.log.Info("raft peer reachable again")
	}
}

// failed reports the peer unreachable, and b's snapshots not delivered,
// for err: b's send failed, or the stream ended (b empty: what it
// carried is lost without knowing which, as raft allows).
func (p *peer) failed(b batch, err error) {
	switch {
	case p.ctx.Err() != nil:
		// Removed or stopping: nobody needs the outcome.
	case reason.Of(err) == reason.NodeRemoved:
		p.t.memberRemoved(p.id)
	default:
		if err == nil {
			err = errors.New("the peer ended the raft message stream")
		}
		p.t.cfg.Raft.ReportUnreachable(p.id)
		for _, m := range b.snaps {
			p.t.cfg.Raft.ReportSnapshot(m.To, raft.SnapshotFailure)
			p.log.Warn("raft snapshot not delivered", "index", m.Snapshot.Metadata.Index, "err", err)
		}
		dropped := p.dropQueued()
		if !p.unreachable {
			p.unreachable = true
			p.log.Warn("raft peer unreachable", "address", p.address(), "err", err)
		} else {
			p.log.Debug("raft messages not delivered", "count", len(b.encoded), "dropped_queued", dropped, "err", err)
		}
	}
}

// dropQueued drops the messages queued behind a failed send instead of
// letting each wait out its own timeout against a peer just found
// unreachable: raft resends what matters once the peer answers again.
// Only snapshots need reporting; the failed send already reported the
// peer unreachable.
func (p *peer) dropQueued() int {
	n := 0
	for ; n < cap(p.queue); n++ {
		select {
		case m := <-p.queue:
			if m.Type == raftpb.MsgSnap {
				p.t.cfg.Raft.ReportSnapshot(m.To, raft.SnapshotFailure)
			}
		default:
			return n
		}
	}
	return n
}

// send puts b on the peer's message stream, opening one when none is
// open on the peer's connection, or streams it in chunks when it is one
// large message.
func (p *peer) send(b batch) error {
	conn := p.connection()
	cfg := &p.t.cfg
	if b.size > cfg.MaxUnarySize {
		client := api.NewRaftServiceClient(conn)
		if err := sendStream(p.ctx, client, b.encoded[0], cfg.ChunkSize, cfg.SendTimeout); err != nil {
			return fmt.Errorf("stream raft %s (%d bytes) to %s: %w", b.first, b.size, hexID(p.id), err)
		}
		return nil
	}
	req := &api.ProcessRaftMessageRequest{Messages: b.encoded}
	var err error
	if !p.unary {
		err = p.sendOnStream(conn, req)
	}
	if p.unary || p.noteUnserved(err) {
		err = p.sendUnary(conn, req)
	}
	if err != nil {
		return fmt.Errorf("send %d raft messages (first %s) to %s: %w", len(b.encoded), b.first, hexID(p.id), err)
	}
	return nil
}

// sendOnStream sends req on the open stream, opening one on conn first
// when there is none on it; a stream that fails is closed.
func (p *peer) sendOnStream(conn *grpc.ClientConn, req *api.ProcessRaftMessageRequest) error {
	if p.stream != nil && p.stream.conn != conn {
		p.closeStream() // the peer moved (setConn)
	}
	if p.stream == nil {
		s, err := openMsgStream(p.ctx, conn, p.t.cfg.SendTimeout)
		if err != nil {
			return err
		}
		p.stream = s
	}
	if err := p.stream.send(req); err != nil {
		p.closeStream()
		return err
	}
	return nil
}

// noteUnserved reports whether err says the peer does not serve
// RaftMessages, and from then on sends it calls instead.
func (p *peer) noteUnserved(err error) bool {
	if status.Code(err) != codes.Unimplemented {
		return false
	}
	p.unary = true
	p.log.Info("raft peer does not serve RaftMessages; sending it a call a batch")
	return true
}

// sendUnary sends req in one ProcessRaftMessage call.
func (p *peer) sendUnary(conn *grpc.ClientConn, req *api.ProcessRaftMessageRequest) error {
	ctx, cancel := context.WithTimeout(p.ctx, p.t.cfg.SendTimeout)
	defer cancel()
	_, err := api.NewRaftServiceClient(conn).ProcessRaftMessage(ctx, req)
	return err
}
