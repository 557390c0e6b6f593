package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"

	"github.com/jaco-project/jaco/api"
)

// msgStream is a peer's open RaftMessages stream: batches go out on it
// one after another without waiting for an answer each, where a call per
// batch waited for its round trip before the next could leave (and paid
// a new stream's headers and trailers every time). A goroutine waits for
// the stream's end, so a refusal is seen when it comes, not at the next
// send.
type msgStream struct {
	conn   *grpc.ClientConn // the connection it was opened on
	stream grpc.ClientStreamingClient[api.ProcessRaftMessageRequest, api.ProcessRaftMessageResponse]
	cancel context.CancelCauseFunc
	// watchdog cancels the stream when a send makes no progress for
	// SendTimeout (the peer stopped reading; flow control holds Send).
	watchdog *time.Timer
	timeout  time.Duration
	// ended is closed when the stream ended; err says why (nil only when
	// it ended without a refusal, which a running server never does).
	ended chan struct{}
	err   error
}

// openMsgStream opens a RaftMessages stream on conn, ended by closing it
// or by cancelling ctx. Opening waits for the connection, for timeout at
// most.
func openMsgStream(ctx context.Context, conn *grpc.ClientConn, timeout time.Duration) (*msgStream, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	watchdog := time.AfterFunc(timeout, func() {
		cancel(fmt.Errorf("%w for %s", errStalled, timeout))
	})
	stream, err := api.NewRaftServiceClient(conn).RaftMessages(ctx)
	watchdog.Stop()
	if err != nil {
		err = withStall(ctx, err)
		cancel(nil)
		return nil, fmt.Errorf("open raft message stream: %w", err)
	}
	s := &msgStream{conn: conn, stream: stream, cancel: cancel, watchdog: watchdog, timeout: timeout, ended: make(chan struct{})}
	go func() {
		defer close(s.ended)
		// The server answers only when it ends the stream: a refusal,
		// or the end of the stream after close.
		err := stream.RecvMsg(new(api.ProcessRaftMessageResponse))
		if errors.Is(err, io.EOF) {
			err = nil
		}
		s.err = withStall(ctx, err)
	}()
	return s, nil
}

// send sends one batch, bounded by the stream's timeout. An error means
// the stream is over: it returns why (the peer's refusal when it ended
// the stream), and the caller closes it.
func (s *msgStream) send(req *api.ProcessRaftMessageRequest) error {
	s.watchdog.Reset(s.timeout)
	err := s.stream.Send(req)
	s.watchdog.Stop()
	if err == nil {
		return nil
	}
	// Send reports io.EOF when the peer has ended the stream; its reason
	// is the stream's status, which the waiting goroutine receives. Any
	// other failure is the stream's own (cancelled, stalled, broken).
	if !errors.Is(err, io.EOF) {
		s.cancel(nil)
	}
	<-s.ended
	if s.err != nil {
		return s.err
	}
	return fmt.Errorf("send raft messages: %w", err)
}

// close ends the stream and waits for its goroutine.
func (s *msgStream) close() {
	s.watchdog.Stop()
	s.cancel(nil)
	<-s.ended
}
