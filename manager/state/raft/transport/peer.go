package transport

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"

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

	mu     sync.Mutex
	addr   string
	conn   *grpc.ClientConn
	closed bool

	// unreachable is owned by run; it turns per-message failures into one
	// log line per outage.
	unreachable bool
}

func newPeer(t *Transport, id uint64, addr string, conn *grpc.ClientConn) *peer {
	ctx, cancel := context.WithCancel(t.ctx)
	return &peer{
		t:      t,
		id:     id,
		log:    t.log.With("raft_id", hexID(id)),
		queue:  make(chan raftpb.Message, t.cfg.QueueSize),
		ctx:    ctx,
		cancel: cancel,
		done:   make(chan struct{}),
		addr:   addr,
		conn:   conn,
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
	p.mu.Lock()
	conn := p.conn
	p.conn, p.closed = nil, true
	p.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
}

func (p *peer) run() {
	defer close(p.done)
	for {
		select {
		case <-p.ctx.Done():
			return
		case m := <-p.queue:
			if p.t.removed.Load() {
				continue // refused as removed: nothing more goes out
			}
			p.deliver(m)
		}
	}
}

// deliver sends m and reports the outcome to raft.
func (p *peer) deliver(m raftpb.Message) {
	err := p.send(m)
	switch {
	case err == nil:
		if m.Type == raftpb.MsgSnap {
			p.t.cfg.Raft.ReportSnapshot(m.To, raft.SnapshotFinish)
			p.log.Info("raft snapshot sent", "index", m.Snapshot.Metadata.Index, "bytes", len(m.Snapshot.Data))
		}
		if p.unreachable {
			p.unreachable = false
			p.log.Info("raft peer reachable again")
		}
	case p.ctx.Err() != nil:
		// Removed or stopping: nobody needs the outcome.
	case reason.Of(err) == reason.NodeRemoved:
		p.t.memberRemoved(p.id)
	default:
		p.t.reportFailure(m)
		if m.Type == raftpb.MsgSnap {
			p.log.Warn("raft snapshot not delivered", "index", m.Snapshot.Metadata.Index, "err", err)
		}
		dropped := p.dropQueued()
		if !p.unreachable {
			p.unreachable = true
			p.log.Warn("raft peer unreachable", "address", p.address(), "err", err)
		} else {
			p.log.Debug("raft message not delivered", "type", m.Type.String(), "dropped_queued", dropped, "err", err)
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

// send delivers m in one call, or streamed when its encoding is large.
func (p *peer) send(m raftpb.Message) error {
	b, err := m.Marshal()
	if err != nil {
		return fmt.Errorf("encode raft %s for %s: %w", m.Type, hexID(m.To), err)
	}
	client := api.NewRaftServiceClient(p.connection())
	cfg := &p.t.cfg
	if len(b) > cfg.MaxUnarySize {
		if err := sendStream(p.ctx, client, b, cfg.ChunkSize, cfg.SendTimeout); err != nil {
			return fmt.Errorf("stream raft %s (%d bytes) to %s: %w", m.Type, len(b), hexID(m.To), err)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(p.ctx, cfg.SendTimeout)
	defer cancel()
	if _, err := client.ProcessRaftMessage(ctx, &api.ProcessRaftMessageRequest{Message: b}); err != nil {
		return fmt.Errorf("send raft %s to %s: %w", m.Type, hexID(m.To), err)
	}
	return nil
}
