// Package grpcflow holds how jaco's gRPC connections pace their traffic:
// the HTTP/2 flow-control windows of its servers and clients, how soon a
// node's connection to another node reconnects, and the workers a server
// runs calls on.
//
// gRPC's default is a dynamic window: the receiver of DATA sends a
// bandwidth-estimation PING whenever none is in flight, and the sender
// answers it. Until the estimate reaches its 16 MiB cap, which small
// messages never push it to, that is a ping and its answer for every
// message a connection carries one at a time: a raft append and its
// acknowledgement, a write and its reply (grpcflow_test.go counts one
// each way per call). At 1 000 writes/s on the 2-core machine of
// docs/bench/cluster.md, static windows took the leader's socket reads
// from 8.5 to 4.0 a write and its writes from 5.4 to 3.1; a follower's
// from 2.3 to 1.2 and 1.8 to 1.2.
//
// The windows are large enough that neither a raft append batch (1 MiB
// at most, 16 in flight) nor a snapshot chunk (1 MiB) waits for a window
// update on loopback or a LAN, and no larger than the dynamic windows
// could grow to. The price: a peer that stops reading is sent up to a
// stream's window before the sender blocks (and its send watchdog, in
// manager/state/raft/transport, starts counting), where a dynamic
// window starts at 64 KiB.
package grpcflow

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
)

const (
	// streamWindow is each stream's receive window.
	streamWindow = 4 << 20
	// connWindow is each connection's receive window, shared by its
	// streams.
	connWindow = 16 << 20
)

// ServerOptions sets the static windows on a server.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.StaticStreamWindowSize(streamWindow),
		grpc.StaticConnWindowSize(connWindow),
	}
}

// streamWorkers is how many goroutines each of jacod's gRPC servers keeps
// to run calls on, where it would start one a call. A call's stack
// outgrows a new goroutine's on its way to the handler, and copying it
// cost the leader 7 % of its CPU at 8 000 writes/s; a
// worker keeps the stack it grew. Calls beyond the workers, and long
// streams (sessions, watches) holding them, still get a goroutine of
// their own. With 64, 500 writes in flight still spent 7.7 % of the
// leader's CPU growing stacks; with 512, 0.6 %. Idle, the workers cost a
// daemon 2.3 MB of RSS (their stacks shrink back at each GC).
const streamWorkers = 512

// StreamWorkers gives a server its workers (streamWorkers).
func StreamWorkers() grpc.ServerOption { return grpc.NumStreamWorkers(streamWorkers) }

// DialOptions sets the static windows on a client connection.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithStaticStreamWindowSize(streamWindow),
		grpc.WithStaticConnWindowSize(connWindow),
	}
}

// NodeDial is how a node dials another node (a manager, or a worker its
// manager): over creds, with DialOptions' windows and Reconnect's pace.
func NodeDial(creds credentials.TransportCredentials) []grpc.DialOption {
	return append(DialOptions(), grpc.WithTransportCredentials(creds), Reconnect())
}

// Reconnect paces a connection between nodes back up: managers come and
// go (restarts, a joiner still presenting its pre-join certificate), so
// it retries within a second or two, not after gRPC's default of up to
// two minutes, far longer than a raft election.
func Reconnect() grpc.DialOption {
	return grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
		MinConnectTimeout: 5 * time.Second,
	})
}
