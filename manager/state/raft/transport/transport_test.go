package transport

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"

	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/internal/waitfor"
)

func indexes(msgs []raftpb.Message) []uint64 {
	out := make([]uint64, len(msgs))
	for i, m := range msgs {
		out[i] = m.Index
	}
	return out
}

func TestMessagesToAPeerArriveInOrder(t *testing.T) {
	s := &fakeServer{}
	addr, _ := serve(t, "127.0.0.1:0", s)
	tr, r := newTransport(t, Config{})
	mustAdd(t, tr, 2, addr)

	const total = 1000
	for i := 0; i < total; i += 10 {
		batch := make([]raftpb.Message, 10)
		for j := range batch {
			batch[j] = app(2, uint64(i+j))
		}
		tr.Send(batch)
	}
	waitfor.Holds(t, 15*time.Second, "all messages", func() (bool, string) {
		n := len(s.received())
		return n == total, fmt.Sprintf("%d of %d", n, total)
	})
	for i, idx := range indexes(s.received()) {
		if idx != uint64(i) {
			t.Fatalf("message %d has index %d: out of order", i, idx)
		}
	}
	if n := r.unreachableCount(2); n != 0 {
		t.Fatalf("healthy peer reported unreachable %d times", n)
	}
}

func TestPeerDownThenUp(t *testing.T) {
	addr := freeAddr(t)
	tr, r := newTransport(t, Config{})
	mustAdd(t, tr, 2, addr)

	tr.Send([]raftpb.Message{app(2, 1)})
	waitfor.Holds(t, 15*time.Second, "ReportUnreachable for the down peer", func() (bool, string) {
		n := r.unreachableCount(2)
		return n > 0, fmt.Sprintf("%d reports", n)
	})

	s := &fakeServer{}
	serve(t, addr, s)
	// Raft keeps sending (heartbeats, probes); so do we.
	next := uint64(2)
	waitfor.Holds(t, 15*time.Second, "a message after the peer came up", func() (bool, string) {
		tr.Send([]raftpb.Message{app(2, next)})
		next++
		got := s.received()
		return len(got) > 0, fmt.Sprintf("sent up to %d, received %v", next-1, indexes(got))
	})
	if got := s.received(); got[0].Index < 2 {
		t.Fatalf("received index %d, sent while the peer was down", got[0].Index)
	}
}

func TestSendNeverBlocksOnAStuckPeer(t *testing.T) {
	s := &fakeServer{block: make(chan struct{})}
	// A fixed window (no growth from bandwidth estimates): a stuck
	// receiver holds at most this much of the stream's messages.
	const window = 64 << 10
	addr, _ := serve(t, "127.0.0.1:0", s, grpc.InitialWindowSize(window), grpc.InitialConnWindowSize(window))
	t.Cleanup(func() { close(s.block) })
	const queue, batch = 8, 16 << 10
	tr, r := newTransport(t, Config{QueueSize: queue, MaxUnarySize: batch, SendTimeout: 30 * time.Second})
	mustAdd(t, tr, 2, addr)

	// Let the first message get stuck in the handler.
	tr.Send([]raftpb.Message{app(2, 0)})
	waitfor.Holds(t, 15*time.Second, "the first message in the handler", func() (bool, string) {
		n, _, _ := s.counts()
		return n == 1, fmt.Sprintf("%d calls", n)
	})
	// Messages of 1 KiB: what the stuck peer's window and the stream's
	// own buffers (about a window's worth, and a batch) take in is a
	// small part of them, and the rest must be dropped, not waited for.
	const total, size = 2000, 1 << 10
	start := time.Now()
	for i := 1; i <= total; i++ {
		m := app(2, uint64(i))
		m.Entries = []raftpb.Entry{{Index: uint64(i), Term: 1, Data: make([]byte, size)}}
		tr.Send([]raftpb.Message{m})
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Fatalf("%d Sends to a stuck peer took %s", total, elapsed)
	}
	if n, most := r.unreachableCount(2), (3*window+batch)/size+queue; n < total-most {
		t.Fatalf("%d messages dropped and reported, want at least %d", n, total-most)
	}
	// Removing the stuck peer aborts the send in flight.
	start = time.Now()
	tr.RemovePeer(2)
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Fatalf("RemovePeer of a stuck peer took %s", elapsed)
	}
}

func TestRefusedAsRemovedStopsSending(t *testing.T) {
	s := &fakeServer{refuse: reason.Error(codes.PermissionDenied, reason.NodeRemoved, "raft member 1 was removed from the cluster")}
	addr, _ := serve(t, "127.0.0.1:0", s)
	var removed atomic.Int32
	tr, _ := newTransport(t, Config{OnRemoved: func() { removed.Add(1) }})
	mustAdd(t, tr, 2, addr)

	for i := range 5 {
		tr.Send([]raftpb.Message{app(2, uint64(i))})
	}
	waitfor.Holds(t, 15*time.Second, "OnRemoved", func() (bool, string) {
		return removed.Load() > 0, "not called"
	})
	attempts, _, _ := s.counts()
	for i := range 20 {
		tr.Send([]raftpb.Message{app(2, uint64(100+i))})
	}
	time.Sleep(200 * time.Millisecond)
	if n := removed.Load(); n != 1 {
		t.Fatalf("OnRemoved called %d times, want once", n)
	}
	if later, _, _ := s.counts(); later != attempts {
		t.Fatalf("%d more messages sent after this member was refused as removed", later-attempts)
	}
}

func TestAddUpdateRemovePeer(t *testing.T) {
	s1, s2 := &fakeServer{}, &fakeServer{}
	addr1, _ := serve(t, "127.0.0.1:0", s1)
	addr2, _ := serve(t, "127.0.0.1:0", s2)
	tr, _ := newTransport(t, Config{})

	mustAdd(t, tr, 2, addr1)
	mustAdd(t, tr, 2, addr1) // idempotent
	tr.Send([]raftpb.Message{app(2, 1)})
	waitfor.Holds(t, 15*time.Second, "delivery to the first address", func() (bool, string) {
		return len(s1.received()) == 1, fmt.Sprint(indexes(s1.received()))
	})

	mustAdd(t, tr, 2, addr2) // another address: an update
	if got, _ := tr.PeerAddr(2); got != addr2 {
		t.Fatalf("PeerAddr after AddPeer with a new address = %s, want %s", got, addr2)
	}
	tr.Send([]raftpb.Message{app(2, 2)})
	waitfor.Holds(t, 15*time.Second, "delivery to the new address", func() (bool, string) {
		return len(s2.received()) == 1, fmt.Sprint(indexes(s2.received()))
	})

	if err := tr.UpdatePeer(3, addr1); !errors.Is(err, ErrUnknownPeer) {
		t.Fatalf("UpdatePeer of an unknown id: %v, want ErrUnknownPeer", err)
	}
	tr.RemovePeer(2)
	if _, ok := tr.PeerAddr(2); ok {
		t.Fatal("peer still known after RemovePeer")
	}
	tr.RemovePeer(2) // idempotent
	tr.Stop()
	tr.Stop() // idempotent
	if err := tr.AddPeer(4, addr1); !errors.Is(err, ErrStopped) {
		t.Fatalf("AddPeer after Stop: %v, want ErrStopped", err)
	}
	tr.Send([]raftpb.Message{app(4, 1)}) // must not panic or block
}

// resolver ignores the goroutine a transport keeps until Stop, with peers
// or without, whatever it is doing.
var resolver = goleak.IgnoreAnyFunction("github.com/jaco-project/jaco/manager/state/raft/transport.(*Transport).runResolver")

// goroutinesEnded is a condition of waitfor.Holds: no goroutine runs but
// those opts ignore (goleak.Find, which also says which ones do).
func goroutinesEnded(opts ...goleak.Option) func() (bool, string) {
	return func() (bool, string) {
		err := goleak.Find(opts...)
		return err == nil, fmt.Sprint(err)
	}
}

func TestRemovePeerAndStopLeaveNoGoroutines(t *testing.T) {
	servers := make([]*fakeServer, 3)
	addrs := make([]string, 3)
	for i := range servers {
		servers[i] = &fakeServer{}
		addrs[i], _ = serve(t, "127.0.0.1:0", servers[i])
	}
	base := goleak.IgnoreCurrent()

	tr, _ := newTransport(t, Config{})
	for i, addr := range addrs {
		mustAdd(t, tr, uint64(i+2), addr)
	}
	for i := range addrs {
		tr.Send([]raftpb.Message{app(uint64(i+2), 1)})
	}
	tr.Send([]raftpb.Message{app(99, 1)}) // unknown: keeps the resolver busy
	for i, s := range servers {
		waitfor.Holds(t, 15*time.Second, fmt.Sprintf("delivery to peer %d", i+2), func() (bool, string) {
			return len(s.received()) == 1, fmt.Sprint(indexes(s.received()))
		})
	}
	for i := range addrs {
		tr.RemovePeer(uint64(i + 2))
	}
	waitfor.Holds(t, 15*time.Second, "peers' goroutines to end after RemovePeer", goroutinesEnded(base, resolver))
	tr.Stop()
	waitfor.Holds(t, 15*time.Second, "every goroutine to end after Stop", goroutinesEnded(base))
}

// TestQueuedMessagesShareACall: what queues up behind a call in flight goes
// out in few calls, in order, instead of one round trip per message.
// Messages sent one at a time to a healthy peer travel on one stream,
// in order: a call and its round trip per batch is what capped a peer
// before (docs/bench/cluster.md).
func TestMessagesShareAStream(t *testing.T) {
	s := &fakeServer{}
	addr, _ := serve(t, "127.0.0.1:0", s)
	tr, r := newTransport(t, Config{})
	mustAdd(t, tr, 2, addr)

	const total = 500
	for i := range total {
		tr.Send([]raftpb.Message{app(2, uint64(i))})
	}
	waitfor.Holds(t, 15*time.Second, "all messages", func() (bool, string) {
		n := len(s.received())
		return n == total, fmt.Sprintf("%d of %d", n, total)
	})
	for i, idx := range indexes(s.received()) {
		if idx != uint64(i) {
			t.Fatalf("message %d has index %d: out of order", i, idx)
		}
	}
	if n := s.streamsOpened(); n != 1 {
		t.Fatalf("%d streams opened for %d messages to a healthy peer, want 1", n, total)
	}
	if n := r.unreachableCount(2); n != 0 {
		t.Fatalf("healthy peer reported unreachable %d times", n)
	}
}

// A peer whose connection, once ready, breaks (its server stops, as a
// killed process's sockets close) is reported lost, once per break; the
// connection closed by moving the peer to another address is not a loss,
// nor is Stop; the watching goroutines end with the transport.
func TestPeerLostWhenItsConnectionBreaks(t *testing.T) {
	s1, s2 := &fakeServer{}, &fakeServer{}
	addr1, _ := serve(t, "127.0.0.1:0", s1)
	addr2, stop2 := serve(t, "127.0.0.1:0", s2)
	base := goleak.IgnoreCurrent()
	lost := make(chan uint64, 10)
	tr, _ := newTransport(t, Config{OnPeerLost: func(id uint64) { lost <- id }})
	noLoss := func(when string) {
		t.Helper()
		select {
		case id := <-lost:
			t.Fatalf("%s: peer %d reported lost", when, id)
		case <-time.After(200 * time.Millisecond):
		}
	}

	mustAdd(t, tr, 2, addr1)
	tr.Send([]raftpb.Message{app(2, 1)})
	waitfor.Holds(t, 15*time.Second, "delivery to the first address", func() (bool, string) {
		return len(s1.received()) == 1, fmt.Sprint(indexes(s1.received()))
	})
	noLoss("after a delivery")

	mustAdd(t, tr, 2, addr2)
	tr.Send([]raftpb.Message{app(2, 2)})
	waitfor.Holds(t, 15*time.Second, "delivery to the new address", func() (bool, string) {
		return len(s2.received()) == 1, fmt.Sprint(indexes(s2.received()))
	})
	noLoss("after moving the peer to another address")

	stop2()
	select {
	case id := <-lost:
		if id != 2 {
			t.Fatalf("peer %d reported lost, want 2", id)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("peer 2's server stopped and no loss was reported within 5s")
	}
	noLoss("after the one report")
	tr.Stop()
	noLoss("after Stop")
	waitfor.Holds(t, 15*time.Second, "every goroutine to end after Stop", goroutinesEnded(base))
}

// earlierServer is a member of an earlier version: it serves
// ProcessRaftMessage but not RaftMessages.
type earlierServer struct{ *fakeServer }

func (earlierServer) RaftMessages(api.RaftService_RaftMessagesServer) error {
	return status.Error(codes.Unimplemented, "unknown method RaftMessages")
}

// A peer that does not serve RaftMessages (an earlier version, during an
// upgrade) gets a call a batch instead: messages keep arriving, in order.
func TestPeerWithoutStreamsGetsCalls(t *testing.T) {
	s := earlierServer{&fakeServer{}}
	addr, _ := serve(t, "127.0.0.1:0", s)
	tr, _ := newTransport(t, Config{})
	mustAdd(t, tr, 2, addr)

	// The first messages may go out on a stream before the refusal
	// comes back; raft resends what is lost, as this loop does.
	next := uint64(0)
	waitfor.Holds(t, 15*time.Second, "a message delivered", func() (bool, string) {
		tr.Send([]raftpb.Message{app(2, next)})
		next++
		return len(s.received()) > 0, fmt.Sprintf("sent up to %d", next-1)
	})
	const more = 100
	for i := range uint64(more) {
		tr.Send([]raftpb.Message{app(2, next+i)})
	}
	// later are the indexes received of the messages sent after the loop.
	later := func() []uint64 {
		var out []uint64
		for _, idx := range indexes(s.received()) {
			if idx >= next {
				out = append(out, idx)
			}
		}
		return out
	}
	waitfor.Holds(t, 15*time.Second, "every later message", func() (bool, string) {
		n := len(later())
		return n == more, fmt.Sprintf("%d of %d", n, more)
	})
	for i, idx := range later() {
		if idx != next+uint64(i) {
			t.Fatalf("later message %d has index %d, want %d: lost or out of order", i, idx, next+uint64(i))
		}
	}
}
