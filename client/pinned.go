package client

import (
	"context"
	"errors"
	"net"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca/token"
)

// caCheck tells a call that failed because the server's CA is not the
// token's (reason ca_mismatch) from one that failed because the server
// could not be reached. gRPC reports both as Unavailable with the
// handshake error flattened to text, so the credentials note the last
// handshake's outcome, from token.ErrCAMismatch, and the interceptors
// read it back; nothing looks at message text.
type caCheck struct {
	target   string
	mismatch atomic.Bool
}

// creds wraps the pinned TLS credentials to record each handshake.
func (c *caCheck) creds(tc credentials.TransportCredentials) credentials.TransportCredentials {
	return pinnedCreds{TransportCredentials: tc, check: c}
}

type pinnedCreds struct {
	credentials.TransportCredentials
	check *caCheck
}

func (p pinnedCreds) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	c, info, err := p.TransportCredentials.ClientHandshake(ctx, authority, conn)
	// Stored before the handshake fails the connection, so a call that
	// fails for it finds it set.
	p.check.mismatch.Store(errors.Is(err, token.ErrCAMismatch))
	return c, info, err
}

func (p pinnedCreds) Clone() credentials.TransportCredentials {
	return pinnedCreds{TransportCredentials: p.TransportCredentials.Clone(), check: p.check}
}

// translate turns the Unavailable of a call refused for a CA mismatch into
// ca_mismatch; other errors pass unchanged.
func (c *caCheck) translate(err error) error {
	if err == nil || status.Code(err) != codes.Unavailable || !c.mismatch.Load() {
		return err
	}
	return reason.Error(codes.Unauthenticated, reason.CAMismatch,
		"the server's CA is not the one the token names: wrong cluster or a man in the middle (server %s)", c.target)
}

func (c *caCheck) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return c.translate(invoker(ctx, method, req, reply, cc, opts...))
}

func (c *caCheck) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, c.translate(err)
	}
	return checkedStream{ClientStream: s, check: c}, nil
}

// checkedStream translates the errors of a stream that was opened before
// its connection failed.
type checkedStream struct {
	grpc.ClientStream
	check *caCheck
}

func (s checkedStream) RecvMsg(m any) error { return s.check.translate(s.ClientStream.RecvMsg(m)) }
func (s checkedStream) SendMsg(m any) error { return s.check.translate(s.ClientStream.SendMsg(m)) }
