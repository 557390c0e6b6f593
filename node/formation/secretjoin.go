package formation

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/ca/token"
)

// Formation joins (docs/adr/0013-ordinal-formation.md). The joiner dials
// TLS without trusting the server's certificate and both ends prove the
// join secret over that connection's exporter (ca.JoinSecret): the joiner
// first, the server only once the joiner's proof held, and the joiner
// trusts the CA in the answer only once the server's proof holds.

// SecretJoin serves FormationService.SecretJoin: it verifies the joiner's
// proof on the connection it arrived on, then asks the leader to admit
// it, vouching as this manager.
func (f *Former) SecretJoin(ctx context.Context, req *api.SecretJoinRequest) (*api.SecretJoinResponse, error) {
	secret := f.cfg.Settings.Secret
	if secret == nil {
		return nil, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "this manager was started without a join secret")
	}
	m := f.d.Manager()
	if m == nil {
		return nil, f.d.NoManager()
	}
	cs, ok := connState(ctx)
	if !ok {
		return nil, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "a formation join must come over TCP with TLS")
	}
	if err := secret.VerifyClient(cs, req.ClientProof); err != nil {
		f.log.Warn("formation join refused", "hostname", req.Hostname, "address", req.Address, "err", err)
		return nil, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "join secret: the proof does not verify")
	}
	self := identity.Identity{Kind: identity.Node, NodeID: m.NodeID(), Role: ca.RoleManager}
	actx := identity.NewContext(metadata.NewIncomingContext(ctx, metadata.MD{}), self)
	// The manager's AdmissionService admits on the leader and forwards to
	// it from other managers.
	resp, err := m.Admission().Admit(actx, &api.AdmitRequest{Hostname: req.Hostname, Address: req.Address, CsrPem: req.CsrPem, NodeId: req.NodeId})
	if err != nil {
		return nil, err
	}
	proof, err := secret.ServerProof(cs)
	if err != nil {
		return nil, internalError(err)
	}
	return &api.SecretJoinResponse{ServerProof: proof, Join: resp}, nil
}

func connState(ctx context.Context) (tls.ConnectionState, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return tls.ConnectionState{}, false
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	return info.State, ok
}

// secretJoinTimeout bounds one attempt: an admission may remove the old
// holder of the name (a few conf changes) before adding the joiner.
const secretJoinTimeout = time.Minute

// errNoProof: the server answered without proving the secret.
var errNoProof = errors.New("the server did not prove the join secret")

// secretJoin sends req to addr over a connection of its own, proving the
// secret, and returns the admission once the server proved it too.
func (f *Former) secretJoin(ctx context.Context, addr string, req *api.SecretJoinRequest) (*api.JoinResponse, error) {
	secret := f.cfg.Settings.Secret
	ctx, cancel := context.WithTimeout(ctx, secretJoinTimeout)
	defer cancel()
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: &tls.Config{
		MinVersion: tls.VersionTLS13,
		NextProtos: []string{"h2"},
		// No certificate can be trusted yet: the server proves the
		// secret on this connection instead (checked below).
		InsecureSkipVerify: true,
	}}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, reason.Error(codes.Unavailable, reason.Unavailable, "dial %s: %v", addr, err)
	}
	tc := raw.(*tls.Conn)
	cs := tc.ConnectionState()
	// gRPC runs over exactly this connection, the one the proofs are
	// bound to; a second dial (after it broke) fails the attempt.
	var used atomic.Bool
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) {
			if used.Swap(true) {
				return nil, errors.New("the proven connection is gone")
			}
			return tc, nil
		}))
	if err != nil {
		tc.Close()
		return nil, fmt.Errorf("grpc over %s: %w", addr, err)
	}
	defer conn.Close()
	if req.ClientProof, err = secret.ClientProof(cs); err != nil {
		return nil, err
	}
	resp, err := api.NewFormationServiceClient(conn).SecretJoin(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := secret.VerifyServer(cs, resp.ServerProof); err != nil || resp.Join == nil {
		return nil, fmt.Errorf("%s: %w", addr, errNoProof)
	}
	return resp.Join, nil
}

// installJoined makes this uninitialized node the manager resp admitted,
// as a token join does once the leader answered.
func (f *Former) installJoined(resp *api.JoinResponse, keyPEM []byte) error {
	unlock, err := f.d.LockInit()
	if err != nil {
		return err
	}
	defer unlock()
	if f.initialized() {
		return errors.New("initialized meanwhile")
	}
	fp, err := token.Fingerprint(resp.CaCertPem)
	if err != nil {
		return err
	}
	if err := checkJoinResponse(resp, fp); err != nil {
		return err
	}
	if _, err := ca.ServerTLSConfig(resp.CaCertPem, resp.CertPem, keyPEM); err != nil {
		return fmt.Errorf("join response: %w", err)
	}
	if resp.Role != api.NodeRole_NODE_ROLE_MANAGER {
		return fmt.Errorf("join response: role %s, want a manager", resp.Role)
	}
	if err := f.installJoin(resp, keyPEM); err != nil {
		return err
	}
	f.log.Info("joined cluster with the join secret", "cluster_id", resp.ClusterId, "node_id", resp.NodeId, "raft_id", fmt.Sprintf("%x", resp.RaftId))
	return nil
}
