package transport

import (
	"fmt"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/internal/waitfor"
)

func TestUnknownDestinationIsResolvedThroughAPeer(t *testing.T) {
	leader := &fakeServer{}
	leaderAddr, _ := serve(t, "127.0.0.1:0", leader)
	// Peer 2 knows where the leader (3) is; we do not.
	known := &fakeServer{addrs: map[uint64]string{3: leaderAddr}}
	knownAddr, _ := serve(t, "127.0.0.1:0", known)
	tr, r := newTransport(t, Config{})
	mustAdd(t, tr, 2, knownAddr)

	tr.Send([]raftpb.Message{app(3, 1)})
	if r.unreachableCount(3) != 1 {
		t.Fatalf("message to an unknown peer: %d unreachable reports, want 1", r.unreachableCount(3))
	}
	next := uint64(2)
	waitfor.Holds(t, 15*time.Second, "delivery to the resolved peer", func() (bool, string) {
		tr.Send([]raftpb.Message{app(3, next)})
		next++
		got := leader.received()
		return len(got) > 0, fmt.Sprintf("sent up to %d, received %v", next-1, indexes(got))
	})
	if addr, ok := tr.PeerAddr(3); !ok || addr != leaderAddr {
		t.Fatalf("PeerAddr(3) = %q %v, want %s", addr, ok, leaderAddr)
	}
}

func TestResolveIsRateLimitedPerID(t *testing.T) {
	s := &fakeServer{}
	addr, _ := serve(t, "127.0.0.1:0", s)
	tr, _ := newTransport(t, Config{ResolveInterval: time.Hour})
	mustAdd(t, tr, 2, addr)

	for i := range 200 {
		tr.Send([]raftpb.Message{app(3, uint64(i)), app(4, uint64(i))})
		time.Sleep(time.Millisecond)
	}
	waitfor.Holds(t, 15*time.Second, "one resolve per unknown id", func() (bool, string) {
		_, _, n := s.counts()
		return n == 2, fmt.Sprintf("%d ResolveAddress calls", n)
	})
	time.Sleep(100 * time.Millisecond)
	if _, _, n := s.counts(); n != 2 {
		t.Fatalf("%d ResolveAddress calls for 2 unknown ids within the interval", n)
	}
}
