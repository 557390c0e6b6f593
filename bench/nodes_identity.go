package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/ca/token"
	"github.com/jaco-project/jaco/client"
)

// simJoinTimeout bounds one node's token and join, as jacod's join does.
const simJoinTimeout = time.Minute

// simIdentity is what a simulated node keeps in its state directory.
type simIdentity struct {
	nodeID string
	// tls is the node's client config: its certificate, the cluster CA.
	tls *tls.Config
	// trust and issuer are the fingerprints the role check reports
	// (ca.BundleFingerprint, ca.IssuerFingerprint), as jacod's does.
	trust, issuer string
}

// joiner gives each node its identity: the one its state directory holds,
// or a new one from a token join through the manager.
type joiner struct {
	o simOpts
	// ctl mints the join tokens (nil when no socket was given: every node
	// must have joined already).
	ctl *client.Client
}

func newJoiner(o simOpts) (*joiner, error) {
	j := &joiner{o: o}
	if o.socket != "" {
		c, err := client.New(client.WithSocket(o.socket))
		if err != nil {
			return nil, fmt.Errorf("manager socket: %w", err)
		}
		j.ctl = c
	}
	return j, nil
}

func (j *joiner) close() {
	if j.ctl != nil {
		_ = j.ctl.Close()
	}
}

// identity loads the node's identity from dir, or joins the node (the
// node's advertised address is 127.0.0.1:port, where nothing listens) and
// keeps what the join gave in dir. joined says the node joined now.
func (j *joiner) identity(ctx context.Context, name, dir string, port int) (id *simIdentity, joined bool, err error) {
	caPEM, certPEM, keyPEM, err := ca.LoadNodeFiles(dir)
	switch {
	case err == nil:
		id, err := loadIdentity(caPEM, certPEM, keyPEM)
		return id, false, err
	case !errors.Is(err, os.ErrNotExist):
		return nil, false, err
	}
	if j.ctl == nil {
		return nil, false, fmt.Errorf("not joined yet (%s has no certificate) and no --socket to get a join token through", dir)
	}
	ctx, cancel := context.WithTimeout(ctx, simJoinTimeout)
	defer cancel()
	tok, err := j.ctl.Control.IssueJoinToken(ctx, &api.IssueJoinTokenRequest{
		Role: api.NodeRole_NODE_ROLE_WORKER, Ttl: durationpb.New(time.Hour)})
	if err != nil {
		return nil, false, fmt.Errorf("issue a join token: %w", err)
	}
	resp, keyPEM, err := j.join(ctx, name, "127.0.0.1:"+strconv.Itoa(port), tok.Token)
	if err != nil {
		return nil, false, err
	}
	if err := ca.SaveNodeFiles(dir, resp.CaCertPem, resp.CertPem, keyPEM); err != nil {
		return nil, false, err
	}
	id, err = loadIdentity(resp.CaCertPem, resp.CertPem, keyPEM)
	if err != nil {
		return nil, false, err
	}
	if id.nodeID != resp.NodeId {
		return nil, false, fmt.Errorf("join answered node id %s with a certificate for %s", resp.NodeId, id.nodeID)
	}
	return id, true, nil
}

// join is a worker's token join (node/formation/join.go): a fresh key and CSR, the
// Join call over TLS pinned to the CA the token names, on a connection of
// its own.
func (j *joiner) join(ctx context.Context, name, addr, tokText string) (*api.JoinResponse, []byte, error) {
	tok, err := token.Parse(tokText)
	if err != nil {
		return nil, nil, fmt.Errorf("join token: %w", err)
	}
	keyPEM, csrPEM, err := ca.NewNodeKey("joining-node")
	if err != nil {
		return nil, nil, fmt.Errorf("node key: %w", err)
	}
	conn, err := grpc.NewClient(j.o.manager, grpc.WithTransportCredentials(credentials.NewTLS(token.PinnedTLSConfig(tok.CAFingerprint))))
	if err != nil {
		return nil, nil, fmt.Errorf("dial %s: %w", j.o.manager, err)
	}
	defer conn.Close()
	resp, err := api.NewMembershipServiceClient(conn).Join(ctx, &api.JoinRequest{
		Token: tokText, CsrPem: csrPEM, Hostname: name, Address: addr})
	if err != nil {
		return nil, nil, fmt.Errorf("join through %s: %w", j.o.manager, err)
	}
	return resp, keyPEM, nil
}

// loadIdentity builds the node's TLS config from its files.
func loadIdentity(caPEM, certPEM, keyPEM []byte) (*simIdentity, error) {
	who, err := ca.IdentityFromPEM(certPEM)
	if err != nil {
		return nil, err
	}
	cfg, err := ca.ClientTLSConfig(caPEM, certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	id := &simIdentity{nodeID: who.NodeID, tls: cfg}
	if id.trust, err = ca.BundleFingerprint(caPEM); err != nil {
		return nil, fmt.Errorf("CA bundle: %w", err)
	}
	if id.issuer, err = ca.IssuerFingerprint(certPEM, caPEM); err != nil {
		return nil, fmt.Errorf("node certificate issuer: %w", err)
	}
	return id, nil
}
