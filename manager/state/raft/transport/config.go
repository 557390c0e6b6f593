package transport

import (
	"errors"
	"log/slog"
	"time"

	"go.etcd.io/raft/v3"
	"google.golang.org/grpc"
)

// Raft is what the transport reports delivery outcomes to; the raft node
// (and go.etcd.io/raft's Node) implements it.
type Raft interface {
	ReportUnreachable(id uint64)
	ReportSnapshot(id uint64, status raft.SnapshotStatus)
}

// Dialer opens a client connection to a peer address. The node supplies
// one with its mTLS credentials. It must not block (use grpc.NewClient):
// peers are added from the Ready loop.
type Dialer func(addr string) (*grpc.ClientConn, error)

// Config configures a Transport. Raft and Dial are required.
type Config struct {
	Raft   Raft
	Dial   Dialer
	Logger *slog.Logger
	// OnRemoved, if set, is called once when a peer refuses a message
	// because this member was removed from the cluster. It runs on a peer's
	// goroutine, so it must not wait for Stop or RemovePeer.
	OnRemoved func()
	// OnPeerLost, if set, is called each time the connection to a peer,
	// having been ready, breaks. The raft member uses it to stop waiting
	// for a dead leader (raft.Node.PeerLost). It runs on the peer's
	// watching goroutine and must not block.
	OnPeerLost func(id uint64)

	// QueueSize is the per-peer send queue, in messages; when it is full
	// further messages are dropped and the peer reported unreachable.
	QueueSize int
	// SendTimeout bounds one batch's send (and a stream's opening), and
	// each chunk of a large message.
	SendTimeout time.Duration
	// MaxUnarySize is the largest encoded message sent in a batch, and
	// the most a batch holds; larger ones go over StreamRaftMessage.
	MaxUnarySize int
	// ChunkSize is the size of one StreamRaftMessage chunk.
	ChunkSize int
	// ResolveInterval is the least time between two attempts to resolve
	// the address of the same unknown raft id.
	ResolveInterval time.Duration
}

// Defaults.
const (
	DefaultQueueSize       = 4096
	DefaultSendTimeout     = 2 * time.Second
	DefaultMaxUnarySize    = 2 << 20
	DefaultChunkSize       = 1 << 20
	DefaultResolveInterval = time.Second
)

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.QueueSize <= 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.SendTimeout <= 0 {
		c.SendTimeout = DefaultSendTimeout
	}
	if c.MaxUnarySize <= 0 {
		c.MaxUnarySize = DefaultMaxUnarySize
	}
	if c.ChunkSize <= 0 {
		c.ChunkSize = DefaultChunkSize
	}
	if c.ResolveInterval <= 0 {
		c.ResolveInterval = DefaultResolveInterval
	}
}

// Errors callers branch on.
var (
	// ErrStopped: the transport was stopped.
	ErrStopped = errors.New("raft transport stopped")
	// ErrUnknownPeer: no peer has that raft id.
	ErrUnknownPeer = errors.New("unknown raft peer")
)
