package transport

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/jaco-project/jaco/api"
)

var (
	errPeerGone     = errors.New("peer removed")
	errEmptyAddress = errors.New("empty address")
)

// requestResolve asks the resolver, without waiting, to find raft id.
// A request that does not fit is dropped: the next message to id asks
// again.
func (t *Transport) requestResolve(id uint64) {
	select {
	case t.resolve <- id:
	default:
	}
}

// runResolver finds the addresses of unknown destinations by asking the
// known peers, one id at a time, at most once per ResolveInterval per id.
func (t *Transport) runResolver() {
	defer t.wg.Done()
	last := make(map[uint64]time.Time)
	for {
		select {
		case <-t.ctx.Done():
			return
		case id := <-t.resolve:
			now := time.Now()
			if now.Sub(last[id]) < t.cfg.ResolveInterval {
				continue
			}
			last[id] = now
			maps.DeleteFunc(last, func(_ uint64, at time.Time) bool {
				return now.Sub(at) >= t.cfg.ResolveInterval
			})
			if _, known := t.PeerAddr(id); known {
				continue
			}
			t.resolveOne(id)
		}
	}
}

// resolveOne asks each known peer in turn for the address of id and adds
// the first answer as a peer.
func (t *Transport) resolveOne(id uint64) {
	for _, p := range t.peerList() {
		addr, err := t.askAddress(p, id)
		if err != nil {
			t.log.Debug("resolve raft address", "raft_id", hexID(id), "asked", hexID(p.id), "err", err)
			continue
		}
		if err := t.AddPeer(id, addr); err != nil {
			if errors.Is(err, ErrStopped) {
				return
			}
			t.log.Warn("add resolved raft peer", "raft_id", hexID(id), "address", addr, "err", err)
			return
		}
		t.log.Info("resolved raft peer address", "raft_id", hexID(id), "address", addr, "from", hexID(p.id))
		return
	}
	t.log.Debug("no peer knows raft id", "raft_id", hexID(id))
}

func (t *Transport) askAddress(p *peer, id uint64) (string, error) {
	conn := p.connection()
	if conn == nil {
		return "", errPeerGone
	}
	ctx, cancel := context.WithTimeout(t.ctx, t.cfg.SendTimeout)
	defer cancel()
	resp, err := api.NewRaftServiceClient(conn).ResolveAddress(ctx, &api.ResolveAddressRequest{RaftId: id})
	if err != nil {
		return "", err
	}
	if resp.Address == "" {
		return "", errEmptyAddress
	}
	return resp.Address, nil
}

// peerList returns the current peers sorted by raft id.
func (t *Transport) peerList() []*peer {
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := slices.Sorted(maps.Keys(t.peers))
	out := make([]*peer, len(ids))
	for i, id := range ids {
		out[i] = t.peers[id]
	}
	return out
}
