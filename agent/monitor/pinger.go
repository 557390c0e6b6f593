package monitor

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// Dial opens a mutual-TLS connection to a node's address.
type Dial func(ctx context.Context, addr string) (*grpc.ClientConn, error)

// Pinger heartbeats to this node's monitors every period. The set and the
// period come from the dispatcher's session messages (Set); both are
// kept when the session ends, so heartbeats go on through a partition
// from the managers.
type Pinger struct {
	dial Dial
	log  *slog.Logger

	mu     sync.Mutex
	peers  []*api.MonitorPeer
	period time.Duration
	kick   chan struct{}
}

// NewPinger returns a pinger with no monitors yet.
func NewPinger(dial Dial, log *slog.Logger) *Pinger {
	return &Pinger{dial: dial, log: log, period: 5 * time.Second, kick: make(chan struct{}, 1)}
}

// Set replaces the monitors and the period; an empty set is ignored (an
// older dispatcher names none: the last known ones stay).
func (p *Pinger) Set(peers []*api.MonitorPeer, period time.Duration) {
	p.mu.Lock()
	changed := len(peers) > 0 && !slices.EqualFunc(peers, p.peers, func(a, b *api.MonitorPeer) bool { return proto.Equal(a, b) })
	if changed {
		p.peers = peers
	}
	if period > 0 {
		p.period = period
	}
	p.mu.Unlock()
	if changed {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
}

// Run heartbeats until ctx ends: one loop per monitor, so that a monitor
// that does not answer delays none of the others' heartbeats.
func (p *Pinger) Run(ctx context.Context) {
	loops := map[string]context.CancelFunc{} // by address
	var wg sync.WaitGroup
	defer func() {
		for _, stop := range loops {
			stop()
		}
		wg.Wait()
	}()
	for {
		p.mu.Lock()
		peers := p.peers
		p.mu.Unlock()
		want := map[string]*api.MonitorPeer{}
		for _, peer := range peers {
			want[peer.GetAddress()] = peer
		}
		for addr, stop := range loops {
			if want[addr] == nil {
				stop()
				delete(loops, addr)
			}
		}
		for addr, peer := range want {
			if loops[addr] != nil {
				continue
			}
			lctx, stop := context.WithCancel(ctx)
			loops[addr] = stop
			wg.Go(func() { p.heartbeat(lctx, peer) })
		}
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		}
	}
}

// heartbeat sends peer a heartbeat every period until ctx ends, over one
// connection.
func (p *Pinger) heartbeat(ctx context.Context, peer *api.MonitorPeer) {
	var conn *grpc.ClientConn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for {
		p.mu.Lock()
		period := p.period
		p.mu.Unlock()
		next := time.Now().Add(period)
		if conn == nil {
			c, err := p.dial(ctx, peer.GetAddress())
			if err != nil {
				p.log.Debug("cannot dial monitor", "node_id", peer.GetNodeId(), "address", peer.GetAddress(), "err", err)
			}
			conn = c
		}
		if conn != nil {
			hctx, cancel := context.WithTimeout(ctx, period)
			_, err := api.NewMonitorServiceClient(conn).Heartbeat(hctx, &api.MonitorHeartbeatRequest{})
			cancel()
			if err != nil && ctx.Err() == nil {
				p.log.Debug("monitor heartbeat failed", "node_id", peer.GetNodeId(), "address", peer.GetAddress(), "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
	}
}
