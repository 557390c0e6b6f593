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

// Run heartbeats until ctx ends. Each monitor keeps one connection, made
// when it joins the set and closed when it leaves it.
func (p *Pinger) Run(ctx context.Context) {
	conns := map[string]*grpc.ClientConn{} // by address
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-p.kick:
		}
		p.mu.Lock()
		peers, period := p.peers, p.period
		p.mu.Unlock()
		keep := map[string]bool{}
		var wg sync.WaitGroup
		for _, peer := range peers {
			addr := peer.GetAddress()
			keep[addr] = true
			c := conns[addr]
			if c == nil {
				var err error
				if c, err = p.dial(ctx, addr); err != nil {
					p.log.Debug("cannot dial monitor", "node_id", peer.GetNodeId(), "address", addr, "err", err)
					continue
				}
				conns[addr] = c
			}
			wg.Go(func() {
				hctx, cancel := context.WithTimeout(ctx, period)
				defer cancel()
				if _, err := api.NewMonitorServiceClient(c).Heartbeat(hctx, &api.MonitorHeartbeatRequest{}); err != nil && ctx.Err() == nil {
					p.log.Debug("monitor heartbeat failed", "node_id", peer.GetNodeId(), "address", addr, "err", err)
				}
			})
		}
		wg.Wait()
		for addr, c := range conns {
			if !keep[addr] {
				c.Close()
				delete(conns, addr)
			}
		}
		timer.Reset(period)
	}
}
