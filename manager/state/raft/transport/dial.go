package transport

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
)

// Reconnection backoff of NewDialer's connections. gRPC's default grows to
// two minutes, far longer than a raft election; a peer back from a restart
// should hear from the leader within seconds.
const (
	reconnectBaseDelay = 100 * time.Millisecond
	reconnectMaxDelay  = 2 * time.Second
)

// NewDialer returns a Dialer that connects lazily (grpc.NewClient) with
// creds, a reconnection backoff capped at a couple of seconds, and opts.
func NewDialer(creds credentials.TransportCredentials, opts ...grpc.DialOption) Dialer {
	base := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay:  reconnectBaseDelay,
				Multiplier: 1.6,
				Jitter:     0.2,
				MaxDelay:   reconnectMaxDelay,
			},
			MinConnectTimeout: DefaultSendTimeout,
		}),
	}
	all := append(base, opts...)
	return func(addr string) (*grpc.ClientConn, error) {
		return grpc.NewClient(addr, all...)
	}
}
