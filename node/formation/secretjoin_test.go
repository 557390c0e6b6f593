package formation

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/ca"
)

// fakeFormation answers every secret join with an admission and a server
// proof made with its own secret (nil: a proof of random bytes).
type fakeFormation struct {
	api.UnimplementedFormationServiceServer
	secret *ca.JoinSecret
	got    chan *api.SecretJoinRequest
}

func (f fakeFormation) SecretJoin(ctx context.Context, req *api.SecretJoinRequest) (*api.SecretJoinResponse, error) {
	f.got <- req
	proof := []byte("not a proof, but 32 bytes long..")
	if f.secret != nil {
		cs, _ := connState(ctx)
		var err error
		if proof, err = f.secret.ServerProof(cs); err != nil {
			return nil, err
		}
	}
	return &api.SecretJoinResponse{ServerProof: proof, Join: &api.JoinResponse{ClusterId: "c", CaCertPem: []byte("impostor CA")}}, nil
}

func serveFake(t *testing.T, f fakeFormation) string {
	t.Helper()
	cfg, err := serverTLS()
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(cfg)))
	api.RegisterFormationServiceServer(srv, f)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// serverTLS is the TLS config of a server that presents a certificate no
// joiner can trust: a CA of its own, as a cluster's would be.
func serverTLS() (*tls.Config, error) {
	caCert, caKey, err := ca.NewRootCA("fake-cluster")
	if err != nil {
		return nil, err
	}
	signer, err := ca.NewSigner(caCert, caKey)
	if err != nil {
		return nil, err
	}
	nodeID, err := identity.NewNodeID()
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := signer.Issue(nodeID, ca.RoleManager, "fake-cluster", time.Hour)
	if err != nil {
		return nil, err
	}
	return ca.ServerTLSConfig(caCert, certPEM, keyPEM)
}

func joiner(t *testing.T, secret string) *Former {
	t.Helper()
	s, err := ca.NewJoinSecret([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return New(Config{Settings: Settings{Secret: s}})
}

// TestSecretJoinTrustsOnlyAServerThatProvesTheSecret: the joiner's proof
// reaches the server bound to that connection, and the answer is taken
// only with a valid server proof: an impostor's CA is never returned.
func TestSecretJoinTrustsOnlyAServerThatProvesTheSecret(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	impostor := fakeFormation{got: make(chan *api.SecretJoinRequest, 1)}
	resp, err := joiner(t, secret).secretJoin(ctx, serveFake(t, impostor), &api.SecretJoinRequest{Hostname: "jaco-1"})
	if !errors.Is(err, errNoProof) || resp != nil {
		t.Fatalf("answer of a server without the secret: %v, %v; want errNoProof", resp, err)
	}
	if req := <-impostor.got; len(req.ClientProof) == 0 {
		t.Fatal("the joiner sent no proof")
	}

	s, _ := ca.NewJoinSecret([]byte(secret))
	genuine := fakeFormation{secret: s, got: make(chan *api.SecretJoinRequest, 1)}
	resp, err = joiner(t, secret).secretJoin(ctx, serveFake(t, genuine), &api.SecretJoinRequest{Hostname: "jaco-1"})
	if err != nil || resp.GetClusterId() != "c" {
		t.Fatalf("answer of a server with the secret: %v, %v", resp, err)
	}
	<-genuine.got
}
