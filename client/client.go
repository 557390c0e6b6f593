// Package client is the Go client of a jacod: what the CLI and the tests
// use. It reaches the daemon on its trusted unix socket, or over TCP with
// the operator token, whose embedded CA fingerprint authenticates the
// server before anything is sent.
//
//	c, err := client.New(client.WithSocket(datadir.Dir(dir).Socket()))
//	c, err := client.New(client.WithServer("10.0.0.1:7000", token))
package client

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca/token"
	"github.com/jaco-project/jaco/internal/grpcflow"
)

// Client is a connection to one jacod.
type Client struct {
	conn *grpc.ClientConn
	// Target is what the client dials, for messages.
	Target  string
	Cluster api.ClusterServiceClient
	Control api.ControlServiceClient
	// Agent reaches the node's own agent (logs, image load).
	Agent api.AgentServiceClient
	// Backup streams a backup from the leader (any manager forwards).
	Backup api.BackupServiceClient
	// Node is what the daemon does to itself (unlock), local socket only.
	Node api.NodeServiceClient
}

type options struct {
	socket string
	server string
	token  string
	retry  bool
}

// Option configures New.
type Option func(*options)

// WithSocket dials the daemon's unix socket.
func WithSocket(path string) Option { return func(o *options) { o.socket = path } }

// WithServer dials addr over TLS, pinning the CA named in token, and sends
// token with every call. addr is HOST or HOST:PORT as ServerAddr takes it.
func WithServer(addr, token string) Option {
	return func(o *options) { o.server, o.token = addr, token }
}

// WithoutRetry turns off retrying calls refused with no_leader; they are
// retried by default until the call's deadline. outcome_unknown is never
// retried: the write may have been applied.
func WithoutRetry() Option { return func(o *options) { o.retry = false } }

// New returns a client; it connects lazily, at the first call.
func New(opts ...Option) (*Client, error) {
	o := options{retry: true}
	for _, opt := range opts {
		opt(&o)
	}
	var target string
	dialOpts := grpcflow.DialOptions()
	switch {
	case o.socket != "" && o.server != "":
		return nil, errors.New("choose a socket or a server, not both")
	case o.socket != "":
		// As a URL: a path holding '#', '?' or '%' must not be cut short.
		target = (&url.URL{Scheme: "unix", Path: o.socket}).String()
		dialOpts = append(dialOpts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	case o.server != "":
		if o.token == "" {
			return nil, errors.New("a server address needs the operator token (JACO_TOKEN)")
		}
		tok, err := token.Parse(o.token)
		if err != nil {
			return nil, fmt.Errorf("operator token: %w", err)
		}
		addr, err := ServerAddr(o.server)
		if err != nil {
			return nil, err
		}
		target = "dns:///" + addr
		check := &caCheck{target: addr}
		dialOpts = append(dialOpts,
			grpc.WithTransportCredentials(check.creds(credentials.NewTLS(token.PinnedTLSConfig(tok.CAFingerprint)))),
			grpc.WithChainUnaryInterceptor(check.unary),
			grpc.WithChainStreamInterceptor(check.stream),
			// The parsed form: text around the token (a trailing newline
			// from a secret file) must not reach the header.
			grpc.WithPerRPCCredentials(bearer(tok.String())))
	default:
		return nil, errors.New("no daemon to dial: give a socket or a server")
	}
	if o.retry {
		dialOpts = append(dialOpts, grpc.WithChainUnaryInterceptor(retryRetryable))
	}
	conn, err := grpc.NewClient(target, dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", target, err)
	}
	return &Client{
		conn:    conn,
		Target:  target,
		Cluster: api.NewClusterServiceClient(conn),
		Control: api.NewControlServiceClient(conn),
		Agent:   api.NewAgentServiceClient(conn),
		Node:    api.NewNodeServiceClient(conn),
		Backup:  api.NewBackupServiceClient(conn),
	}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// bearer sends the operator token; only over TLS.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

func (bearer) RequireTransportSecurity() bool { return true }

// retryRetryable retries a call refused with no_leader, with backoff, until
// the call's context ends: no_leader means the write was certainly not
// proposed. Never outcome_unknown: a retry of a write that was applied
// would fail (version_conflict) or apply it twice. The decision rests on
// the reason word the server set, never on message text.
func retryRetryable(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	backoff := 100 * time.Millisecond
	for {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if err == nil || reason.Of(err) != reason.NoLeader {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}
