package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jaco-project/jaco/api"
)

// errStalled is the cause of a stream cancelled for making no progress.
var errStalled = errors.New("no progress")

// sendStream sends the encoded message b over StreamRaftMessage in chunks
// of chunkSize. Rather than bounding the whole transfer, which would have
// to fit the slowest link and the biggest snapshot, it cancels the stream
// when one chunk, or the final answer, takes longer than timeout.
func sendStream(ctx context.Context, client api.RaftServiceClient, b []byte, chunkSize int, timeout time.Duration) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watchdog := time.AfterFunc(timeout, func() { cancel(fmt.Errorf("%w for %s", errStalled, timeout)) })
	defer watchdog.Stop()

	err := func() error {
		stream, err := client.StreamRaftMessage(ctx)
		if err != nil {
			return fmt.Errorf("open stream: %w", err)
		}
		for off := 0; off < len(b); off += chunkSize {
			chunk := b[off:min(off+chunkSize, len(b))]
			if err := stream.Send(&api.StreamRaftMessageRequest{Chunk: chunk}); err != nil {
				if errors.Is(err, io.EOF) {
					break // the server ended the stream: CloseAndRecv has why
				}
				return fmt.Errorf("send chunk at %d: %w", off, err)
			}
			watchdog.Reset(timeout)
		}
		if _, err := stream.CloseAndRecv(); err != nil {
			return fmt.Errorf("close stream: %w", err)
		}
		return nil
	}()
	return withStall(ctx, err)
}

// withStall names the stall behind err when a watchdog cancelled ctx for
// one (errStalled); err unchanged otherwise.
func withStall(ctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), errStalled) {
		return fmt.Errorf("%w: %w", context.Cause(ctx), err)
	}
	return err
}
