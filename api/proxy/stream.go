package proxy

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"
)

// WithContext returns stream with its Context replaced by ctx. A wrapper
// serving a server-streaming call locally hands the routed ctx to the
// implementation this way, as it passes ctx to a unary method.
func WithContext[T any](stream grpc.ServerStreamingServer[T], ctx context.Context) grpc.ServerStreamingServer[T] {
	return ctxStream[T]{ServerStreamingServer: stream, ctx: ctx}
}

type ctxStream[T any] struct {
	grpc.ServerStreamingServer[T]
	ctx context.Context
}

func (s ctxStream[T]) Context() context.Context { return s.ctx }

// Relay sends every message of the leader's stream src to the caller's
// stream dst until src ends. An error of src (the leader's status) is
// returned unchanged so the caller sees the leader's reason word.
func Relay[T any](dst grpc.ServerStreamingServer[T], src grpc.ServerStreamingClient[T]) error {
	for {
		msg, err := src.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := dst.Send(msg); err != nil {
			return err
		}
	}
}
