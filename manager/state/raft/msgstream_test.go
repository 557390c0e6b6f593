package raft

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// openRaftMessages opens a RaftMessages stream on c; the context it
// returns, the stream's, ends with the test, after 10 s at most.
func openRaftMessages(t *testing.T, c api.RaftServiceClient) (context.Context, api.RaftService_RaftMessagesClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	stream, err := c.RaftMessages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, stream
}

// Each batch on a RaftMessages stream is stepped as it arrives, the
// stream staying open; a message that does not decode ends the stream
// with invalid_spec.
func TestRaftMessagesStepsEachBatchUntilARefusal(t *testing.T) {
	_, sent, c := serveRaft(t)
	const from = 0xfeed
	_, stream := openRaftMessages(t, c)
	for i := 1; i <= 3; i++ {
		msg := staleAppend(t, from, 100)
		if err := stream.Send(&api.ProcessRaftMessageRequest{Messages: [][]byte{msg}}); err != nil {
			t.Fatalf("send batch %d: %v", i, err)
		}
		waitAnswers(t, sent, from, i)
	}
	if err := stream.Send(&api.ProcessRaftMessageRequest{Messages: [][]byte{{0xff, 0xff}}}); err != nil {
		t.Fatalf("send the bad batch: %v", err)
	}
	err := stream.RecvMsg(new(api.ProcessRaftMessageResponse))
	if got := reason.Of(err); got != reason.InvalidSpec {
		t.Fatalf("stream ended with %v (reason %q), want reason %q", err, got, reason.InvalidSpec)
	}
}

// EndStreams ends the open streams as unavailable and refuses new ones,
// so the server's graceful stop, which waits for every stream, returns.
func TestEndStreamsLetsTheServerStop(t *testing.T) {
	_, sent, c, s := serveRaftService(t)
	const from = 0xfeed
	ctx, stream := openRaftMessages(t, c)
	if err := stream.Send(&api.ProcessRaftMessageRequest{Messages: [][]byte{staleAppend(t, from, 100)}}); err != nil {
		t.Fatal(err)
	}
	waitAnswers(t, sent, from, 1)

	s.svc.EndStreams()
	err := stream.RecvMsg(new(api.ProcessRaftMessageResponse))
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("open stream ended with %v, want unavailable", err)
	}
	late, err := c.RaftMessages(ctx)
	if err == nil {
		err = late.RecvMsg(new(api.ProcessRaftMessageResponse))
	}
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("a stream opened after EndStreams: %v, want unavailable", err)
	}
	stopped := make(chan struct{})
	go func() {
		s.srv.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-ctx.Done():
		t.Fatal("the server's graceful stop still waits after EndStreams")
	}
}

// A stream its sender closes ends without an error, its batches stepped.
func TestRaftMessagesClosedBySender(t *testing.T) {
	_, sent, c := serveRaft(t)
	const from = 0xfeed
	_, stream := openRaftMessages(t, c)
	if err := stream.Send(&api.ProcessRaftMessageRequest{Messages: [][]byte{staleAppend(t, from, 100)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.CloseAndRecv(); err != nil {
		t.Fatalf("close the stream: %v", err)
	}
	waitAnswers(t, sent, from, 1)
}
