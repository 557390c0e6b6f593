// Package identity names who is calling an RPC.
//
// The node's interceptors establish an Identity from the transport (unix
// socket peer, verified client certificate, operator token) and put it in
// the context. The raftproxy wrappers carry it to the leader in metadata;
// the leader trusts that metadata only when the direct caller is itself a
// manager (checked by the node, see FromForwarded).
//
// It also mints ids (NewID): a node's id is the name its certificate
// proves, and services and tasks get ids of the same form.
package identity

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"strings"

	"google.golang.org/grpc/metadata"
)

// Kind is how a caller proved who it is.
type Kind string

const (
	// Local is a caller on the trusted unix socket.
	Local Kind = "local"
	// Operator is a TCP caller that presented the operator token.
	Operator Kind = "operator"
	// Node is a TCP caller with a verified cluster certificate.
	Node Kind = "node"
	// Anonymous is a TCP caller that proved nothing. It may only make calls
	// that carry their own proof (a join with its join token).
	Anonymous Kind = "anonymous"
)

// Identity is a verified caller.
type Identity struct {
	Kind Kind
	// NodeID and Role are set for Kind Node (certificate CN and OU).
	NodeID string
	Role   string
}

func (id Identity) String() string {
	if id.Kind == Node {
		return fmt.Sprintf("node:%s:%s", id.Role, id.NodeID)
	}
	return string(id.Kind)
}

type ctxKey struct{}

// NewContext returns ctx carrying id.
func NewContext(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// FromContext returns the identity put into ctx by the node's interceptors.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(ctxKey{}).(Identity)
	return id, ok
}

// ForwardedKey is the metadata key a raftproxy wrapper sets on a forwarded
// call: the original caller's identity. Its presence also marks the call as
// forwarded once, so a receiver that is not the leader refuses a second hop.
const ForwardedKey = "jaco-forwarded-for"

// Encode renders id for ForwardedKey.
func (id Identity) Encode() string {
	return strings.Join([]string{string(id.Kind), id.Role, id.NodeID}, "|")
}

// Decode parses a value written by Encode.
func Decode(s string) (Identity, error) {
	parts := strings.Split(s, "|")
	if len(parts) != 3 {
		return Identity{}, fmt.Errorf("malformed forwarded identity %q", s)
	}
	id := Identity{Kind: Kind(parts[0]), Role: parts[1], NodeID: parts[2]}
	switch id.Kind {
	case Local, Operator, Node, Anonymous:
		return id, nil
	}
	return Identity{}, fmt.Errorf("unknown identity kind %q", parts[0])
}

// Forwarded returns the identity a proxy put into the incoming metadata of
// ctx, and whether the call was forwarded at all.
func Forwarded(ctx context.Context) (Identity, bool, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(ForwardedKey)
	if len(vals) == 0 {
		return Identity{}, false, nil
	}
	if len(vals) > 1 {
		return Identity{}, true, fmt.Errorf("%d forwarded identities in one call", len(vals))
	}
	id, err := Decode(vals[0])
	return id, true, err
}

// NewID returns a fresh id for a stored object (node, service, task): 128
// random bits in the encoding of NodeIDOf, so that every id reads alike.
func NewID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("read random id: %w", err)
	}
	return NodeIDOf(b), nil
}

// NewNodeID returns a fresh node id. Any NewID is one: its encoding is
// already the DNS label a certificate name needs.
func NewNodeID() (string, error) { return NewID() }

// NodeIDOf is the node id made of b: 26 lowercase base32 characters, a
// valid DNS label as certificate names need.
func NodeIDOf(b [16]byte) string {
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}
