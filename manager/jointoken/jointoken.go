// Package jointoken issues and redeems the single-use tokens that let a
// node join the cluster (docs/design.md §4).
//
// Only a token's hash is stored, in a JoinToken object with its role,
// expiry and consumed_at, through raft like any other write. Find compares
// the presented secret against every stored hash in constant time and
// changes nothing; Redeem marks the token consumed with a versioned update
// in the same transaction that records the joined node (docs/adr/0017):
// of two joiners racing with one token, the second loses on the version
// and is told the token is consumed, and a join refused before that
// transaction leaves the token usable. All run on the leader (the callers
// are leader-side RPC handlers behind raftproxy).
package jointoken

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/ca/token"
	"github.com/jaco-project/jaco/manager/state/store"
)

// DefaultTTL is how long a token is valid unless asked otherwise.
const DefaultTTL = 24 * time.Hour

// Why a token was refused. The API edge maps them to the reason words
// token_invalid, token_expired and token_consumed.
var (
	ErrInvalid  = errors.New("join token is not valid for this cluster")
	ErrExpired  = errors.New("join token has expired")
	ErrConsumed = errors.New("join token has already been used")
	// ErrBadRequest: a role or ttl that makes no token (invalid_spec).
	ErrBadRequest = errors.New("invalid join token request")
	// ErrNoCluster: the store holds no cluster object yet.
	ErrNoCluster = errors.New("cluster is not initialized")
)

// Issue creates a token for role valid for ttl from now and returns its
// text (shown once) and the stored object.
func Issue(ctx context.Context, st *store.Store, role api.NodeRole, ttl time.Duration, now time.Time) (string, *api.JoinToken, error) {
	if role != api.NodeRole_NODE_ROLE_MANAGER && role != api.NodeRole_NODE_ROLE_WORKER {
		return "", nil, fmt.Errorf("%w: role must be manager or worker, not %v", ErrBadRequest, role)
	}
	if ttl <= 0 {
		return "", nil, fmt.Errorf("%w: ttl %s must be positive", ErrBadRequest, ttl)
	}
	fp, err := caFingerprint(st)
	if err != nil {
		return "", nil, err
	}
	tok, err := token.New(fp)
	if err != nil {
		return "", nil, err
	}
	id, err := newID()
	if err != nil {
		return "", nil, err
	}
	jt := &api.JoinToken{
		Id:        id,
		Meta:      &api.Meta{},
		Hash:      tok.Hash(),
		Role:      role,
		ExpiresAt: timestamppb.New(now.Add(ttl)),
	}
	if err := st.Update(ctx, func(tx *store.Tx) error { return tx.Create(jt) }); err != nil {
		return "", nil, fmt.Errorf("store join token: %w", err)
	}
	return tok.String(), jt, nil
}

// Find returns the stored token text names, if it can still be redeemed
// at now. It changes nothing: a join checks everything else it can (the
// name, the certificate request) between Find and Redeem, so a join
// refused for any of those leaves the token for the next attempt.
func Find(st *store.Store, text string, now time.Time) (*api.JoinToken, error) {
	tok, err := token.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	fp, err := caFingerprint(st)
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare([]byte(fp), []byte(tok.CAFingerprint)) != 1 {
		return nil, fmt.Errorf("%w: it names another cluster's CA", ErrInvalid)
	}
	// The store finds the token by the SHA-256 of its secret. How long
	// that takes may say how much of that hash a stored one shares,
	// which tells nothing of any secret; comparing against every token
	// instead made each join read them all (docs/bench/largestore.md:
	// 5 000 joins slowed from 150 to 21 a second).
	var found *api.JoinToken
	st.View(func(tx store.ReadTx) { found = tx.FindJoinTokenByHash(tok.Hash()) })
	if found == nil {
		return nil, ErrInvalid
	}
	if err := usable(found, now); err != nil {
		return nil, err
	}
	return found, nil
}

// Redeem consumes the token id (found by Find) in one store transaction
// with the objects record creates (nil: none), so that a token is used up
// exactly when what it admits is recorded, and a refused record leaves it
// unused. record only creates: a version conflict is then the token's.
// Of two redemptions racing for one token, the second's
// transaction is refused on the token's version and Redeem returns
// ErrConsumed; a token that expired or was swept since Find gives
// ErrExpired or ErrInvalid. It returns the consumed token.
func Redeem(ctx context.Context, st *store.Store, id string, now time.Time, record func(tx *store.Tx) error) (*api.JoinToken, error) {
	var consumed *api.JoinToken
	err := st.Update(ctx, func(tx *store.Tx) error {
		cur := tx.GetJoinToken(id)
		if cur == nil {
			return fmt.Errorf("%w: it is no longer stored", ErrInvalid)
		}
		if err := usable(cur, now); err != nil {
			return err
		}
		consumed = proto.Clone(cur).(*api.JoinToken)
		consumed.ConsumedAt = timestamppb.New(now)
		if err := tx.Update(consumed); err != nil {
			return fmt.Errorf("consume join token: %w", err)
		}
		if record == nil {
			return nil
		}
		return record(tx)
	})
	if errors.Is(err, store.ErrVersionConflict) {
		// Another redemption committed between our read and our write.
		return nil, ErrConsumed
	}
	if err != nil {
		return nil, err
	}
	return consumed, nil
}

func usable(jt *api.JoinToken, now time.Time) error {
	if jt.ConsumedAt != nil {
		return fmt.Errorf("%w (at %s)", ErrConsumed, jt.ConsumedAt.AsTime().Format(time.RFC3339))
	}
	if !now.Before(jt.ExpiresAt.AsTime()) {
		return fmt.Errorf("%w (at %s)", ErrExpired, jt.ExpiresAt.AsTime().Format(time.RFC3339))
	}
	return nil
}

// lastFingerprint is the CA certificate last fingerprinted, and its
// fingerprint: the certificate changes only with a CA rotation, and
// parsing it for every token issued took 9 % of a leader's CPU at 8 000
// tokens/s (docs/bench/cluster.md).
var lastFingerprint struct {
	sync.Mutex
	pem []byte
	fp  string
}

func caFingerprint(st *store.Store) (string, error) {
	var c *api.Cluster
	st.View(func(tx store.ReadTx) { c = tx.ClusterShared() })
	if c == nil {
		return "", ErrNoCluster
	}
	lastFingerprint.Lock()
	defer lastFingerprint.Unlock()
	if lastFingerprint.pem != nil && bytes.Equal(lastFingerprint.pem, c.CaCertPem) {
		return lastFingerprint.fp, nil
	}
	fp, err := token.Fingerprint(c.CaCertPem)
	if err != nil {
		return "", err
	}
	lastFingerprint.pem, lastFingerprint.fp = c.CaCertPem, fp
	return fp, nil
}

func newID() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("read random token id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
