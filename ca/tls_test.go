package ca

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jaco-project/jaco/ca/token"
)

// handshake runs one TLS connection over loopback and returns the server's
// and the client's errors. The server writes a byte after its handshake and
// the client reads it, so that a client certificate the server refuses after
// the client's TLS 1.3 handshake already finished shows on the client too.
// On success the server's view of the connection is returned.
func handshake(t *testing.T, server, client *tls.Config) (state tls.ConnectionState, serverErr, clientErr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	type result struct {
		err   error
		state tls.ConnectionState
	}
	done := make(chan result, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		tc := tls.Server(conn, server)
		if err := tc.Handshake(); err != nil {
			done <- result{err: err}
			return
		}
		_, err = tc.Write([]byte{1})
		done <- result{err: err, state: tc.ConnectionState()}
	}()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	tc := tls.Client(conn, client)
	clientErr = tc.Handshake()
	if clientErr == nil {
		_, clientErr = io.ReadFull(tc, make([]byte, 1))
	}
	tc.Close()
	r := <-done
	return r.state, r.err, clientErr
}

// testNode is one node's TLS material.
type testNode struct {
	ca              testCA
	certPEM, keyPEM []byte
}

func newTestNode(t *testing.T, c testCA, nodeID, role string) testNode {
	certPEM, keyPEM := c.issue(t, nodeID, role)
	return testNode{ca: c, certPEM: certPEM, keyPEM: keyPEM}
}

func (n testNode) server(t *testing.T) *tls.Config {
	t.Helper()
	cfg, err := ServerTLSConfig(n.ca.certPEM, n.certPEM, n.keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func (n testNode) client(t *testing.T) *tls.Config {
	t.Helper()
	cfg, err := ClientTLSConfig(n.ca.certPEM, n.certPEM, n.keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestMutualTLS(t *testing.T) {
	c := newTestCA(t, testCluster)
	srv := newTestNode(t, c, "manager-1", RoleManager)
	cli := newTestNode(t, c, "worker-1", RoleWorker)

	state, serverErr, clientErr := handshake(t, srv.server(t), cli.client(t))
	if serverErr != nil || clientErr != nil {
		t.Fatalf("server: %v, client: %v", serverErr, clientErr)
	}
	if len(state.VerifiedChains) == 0 {
		t.Fatal("server has no verified client chain")
	}
	id, err := IdentityFromCert(state.VerifiedChains[0][0])
	if err != nil {
		t.Fatal(err)
	}
	if want := (NodeIdentity{NodeID: "worker-1", Role: RoleWorker, ClusterID: testCluster}); id != want {
		t.Errorf("client identity %+v, want %+v", id, want)
	}
}

func TestClientServerName(t *testing.T) {
	c := newTestCA(t, testCluster)
	srv := newTestNode(t, c, "manager-1", RoleManager)
	cli := newTestNode(t, c, "worker-1", RoleWorker)

	right := cli.client(t)
	right.ServerName = "manager-1"
	if _, serverErr, clientErr := handshake(t, srv.server(t), right); serverErr != nil || clientErr != nil {
		t.Errorf("expected node: server: %v, client: %v", serverErr, clientErr)
	}

	wrong := cli.client(t)
	wrong.ServerName = "manager-2"
	if _, _, clientErr := handshake(t, srv.server(t), wrong); clientErr == nil {
		t.Error("client accepted manager-1 when it expected manager-2")
	}
}

func TestServerAcceptsClientWithoutCert(t *testing.T) {
	c := newTestCA(t, testCluster)
	srv := newTestNode(t, c, "manager-1", RoleManager)
	cli := srv.client(t)
	cli.Certificates = nil
	state, serverErr, clientErr := handshake(t, srv.server(t), cli)
	if serverErr != nil || clientErr != nil {
		t.Fatalf("server: %v, client: %v", serverErr, clientErr)
	}
	if len(state.PeerCertificates) != 0 {
		t.Error("server saw a client certificate")
	}
}

func TestServerRefusesForeignClientCert(t *testing.T) {
	c := newTestCA(t, testCluster)
	other := newTestCA(t, testCluster)
	srv := newTestNode(t, c, "manager-1", RoleManager)
	intruder := newTestNode(t, other, "worker-1", RoleWorker)

	// The intruder trusts the cluster's CA, but its own certificate comes
	// from another CA.
	cli, err := ClientTLSConfig(c.certPEM, intruder.certPEM, intruder.keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	_, serverErr, clientErr := handshake(t, srv.server(t), cli)
	if serverErr == nil || clientErr == nil {
		t.Fatalf("foreign client certificate accepted: server: %v, client: %v", serverErr, clientErr)
	}
	var unknown x509.UnknownAuthorityError
	if !errors.As(serverErr, &unknown) {
		t.Errorf("server error %v, want an unknown authority", serverErr)
	}
}

func TestClientRefusesForeignServer(t *testing.T) {
	c := newTestCA(t, testCluster)
	other := newTestCA(t, testCluster)
	srv := newTestNode(t, other, "manager-1", RoleManager)
	cli := newTestNode(t, c, "worker-1", RoleWorker)
	if _, _, clientErr := handshake(t, srv.server(t), cli.client(t)); clientErr == nil {
		t.Error("client accepted a server of another CA")
	}
}

func TestPinnedTLS(t *testing.T) {
	c := newTestCA(t, testCluster)
	other := newTestCA(t, testCluster)
	srv := newTestNode(t, c, "manager-1", RoleManager)
	fp, err := token.Fingerprint(c.certPEM)
	if err != nil {
		t.Fatal(err)
	}
	otherFP, err := token.Fingerprint(other.certPEM)
	if err != nil {
		t.Fatal(err)
	}

	if _, serverErr, clientErr := handshake(t, srv.server(t), token.PinnedTLSConfig(fp)); serverErr != nil || clientErr != nil {
		t.Errorf("right fingerprint: server: %v, client: %v", serverErr, clientErr)
	}
	// The host name the client dialled does not matter: the pin does.
	named := token.PinnedTLSConfig(fp)
	named.ServerName = "manager.example"
	if _, serverErr, clientErr := handshake(t, srv.server(t), named); serverErr != nil || clientErr != nil {
		t.Errorf("right fingerprint, dialled by name: server: %v, client: %v", serverErr, clientErr)
	}
	if _, _, clientErr := handshake(t, srv.server(t), token.PinnedTLSConfig(otherFP)); clientErr == nil {
		t.Error("client accepted a server whose CA has another fingerprint")
	}

	// A server of another CA that also sends our CA certificate in its chain
	// does not verify against it.
	impostor := newTestNode(t, other, "manager-1", RoleManager)
	cfg := impostor.server(t)
	caDER := mustParseCert(t, c.certPEM).Raw
	cfg.Certificates[0].Certificate = append(cfg.Certificates[0].Certificate, caDER)
	if _, _, clientErr := handshake(t, cfg, token.PinnedTLSConfig(fp)); clientErr == nil {
		t.Error("client accepted a server that only relays the pinned CA certificate")
	}

	// A server that does not send its CA certificate cannot be pinned.
	bare := srv.server(t)
	bare.Certificates[0].Certificate = bare.Certificates[0].Certificate[:1]
	if _, _, clientErr := handshake(t, bare, token.PinnedTLSConfig(fp)); clientErr == nil {
		t.Error("client accepted a server that sent no CA certificate")
	}
}
