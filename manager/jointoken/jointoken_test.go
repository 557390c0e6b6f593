package jointoken

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/ca/token"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

func newStore(t testing.TB) *store.Store {
	t.Helper()
	st := storetest.New(t)
	caCert, caKey, err := ca.NewRootCA("c1")
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(context.Background(), func(tx *store.Tx) error {
		return tx.Create(&api.Cluster{Id: "c1", Meta: &api.Meta{}, CaCertPem: caCert, CaKeyPem: caKey})
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// redeem is a join that records nothing but the token's use.
func redeem(ctx context.Context, st *store.Store, text string, now time.Time) (*api.JoinToken, error) {
	jt, err := Find(st, text, now)
	if err != nil {
		return nil, err
	}
	return Redeem(ctx, st, jt.Id, now, nil)
}

func TestIssueAndRedeemOnce(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	var before *api.Cluster
	st.View(func(tx store.ReadTx) { before = tx.Cluster() })
	text, jt, err := Issue(ctx, st, api.NodeRole_NODE_ROLE_MANAGER, time.Hour, t0)
	if err != nil {
		t.Fatal(err)
	}
	// Issue reads the stored cluster itself, not a copy (ADR 0031): it
	// must leave it as it was.
	st.View(func(tx store.ReadTx) {
		if after := tx.ClusterShared(); !proto.Equal(before, after) {
			t.Errorf("Issue changed the stored cluster: %v, was %v", after, before)
		}
	})
	if !jt.ExpiresAt.AsTime().Equal(t0.Add(time.Hour)) {
		t.Fatalf("expires at %v", jt.ExpiresAt.AsTime())
	}
	st.View(func(tx store.ReadTx) {
		for _, stored := range tx.ListJoinTokens() {
			if strings.Contains(string(stored.Hash), text) || len(stored.Hash) != 32 {
				t.Errorf("stored token is not just a hash: %x", stored.Hash)
			}
		}
	})
	got, err := redeem(ctx, st, text, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got.Role != api.NodeRole_NODE_ROLE_MANAGER || got.ConsumedAt == nil {
		t.Fatalf("redeemed %v", got)
	}
	if _, err := redeem(ctx, st, text, t0.Add(2*time.Minute)); !errors.Is(err, ErrConsumed) {
		t.Fatalf("second redeem: %v, want ErrConsumed", err)
	}
}

func TestRedeemRefusals(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	text, _, err := Issue(ctx, st, api.NodeRole_NODE_ROLE_WORKER, time.Hour, t0)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := token.Parse(text)
	other, _ := token.New(tok.CAFingerprint)
	foreign, _ := token.New(strings.Repeat("ab", 32))
	for _, tc := range []struct {
		name string
		text string
		at   time.Time
		want error
	}{
		{"garbage", "hello", t0, ErrInvalid},
		{"unknown secret", other.String(), t0, ErrInvalid},
		{"another cluster", foreign.String(), t0, ErrInvalid},
		{"expired", text, t0.Add(time.Hour), ErrExpired},
	} {
		if _, err := redeem(ctx, st, tc.text, tc.at); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// None of the refusals consumed the real token.
	if _, err := redeem(ctx, st, text, t0); err != nil {
		t.Fatalf("valid token after refusals: %v", err)
	}
}

func TestConcurrentRedeemsOneWins(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	text, _, err := Issue(ctx, st, api.NodeRole_NODE_ROLE_WORKER, time.Hour, t0)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := redeem(ctx, st, text, t0)
			errs <- err
		}()
	}
	var won int
	for range n {
		switch err := <-errs; {
		case err == nil:
			won++
		case !errors.Is(err, ErrConsumed):
			t.Errorf("loser got %v, want ErrConsumed", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d redeems succeeded, want exactly 1", won)
	}
}

func TestIssueRefusesBadInput(t *testing.T) {
	st := newStore(t)
	for _, tc := range []struct {
		role api.NodeRole
		ttl  time.Duration
	}{{api.NodeRole_NODE_ROLE_UNSPECIFIED, time.Hour}, {api.NodeRole_NODE_ROLE_WORKER, 0}, {api.NodeRole_NODE_ROLE_WORKER, -time.Hour}} {
		if _, _, err := Issue(context.Background(), st, tc.role, tc.ttl, t0); !errors.Is(err, ErrBadRequest) {
			t.Errorf("Issue(%v, %s): %v, want ErrBadRequest", tc.role, tc.ttl, err)
		}
	}
	st.View(func(tx store.ReadTx) {
		if n := len(tx.ListJoinTokens()); n != 0 {
			t.Errorf("%d tokens stored by refused calls", n)
		}
	})
}

func TestSweepDeletesOnlySpentTokens(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	fresh, _, _ := Issue(ctx, st, api.NodeRole_NODE_ROLE_WORKER, 48*time.Hour, t0)
	used, _, _ := Issue(ctx, st, api.NodeRole_NODE_ROLE_WORKER, 48*time.Hour, t0)
	if _, err := redeem(ctx, st, used, t0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Issue(ctx, st, api.NodeRole_NODE_ROLE_WORKER, time.Minute, t0); err != nil {
		t.Fatal(err)
	}
	// Within the grace period nothing goes: a refused joiner can still be
	// told why.
	if n, err := Sweep(ctx, st, t0.Add(30*time.Minute), time.Hour); err != nil || n != 0 {
		t.Fatalf("Sweep within grace = %d, %v; want 0", n, err)
	}
	// Past it, the used and the expired token go; the fresh one stays and
	// still works.
	if n, err := Sweep(ctx, st, t0.Add(2*time.Hour), time.Hour); err != nil || n != 2 {
		t.Fatalf("Sweep past grace = %d, %v; want 2", n, err)
	}
	if _, err := redeem(ctx, st, fresh, t0.Add(2*time.Hour)); err != nil {
		t.Fatalf("fresh token after sweep: %v", err)
	}
}

// Find only looks; Redeem consumes the token together with what the join
// records, or not at all.
func TestRedeemIsOneTransactionWithTheJoin(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	text, _, err := Issue(ctx, st, api.NodeRole_NODE_ROLE_WORKER, time.Hour, t0)
	if err != nil {
		t.Fatal(err)
	}
	jt, err := Find(st, text, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Find(st, text, t0); err != nil {
		t.Fatalf("Find consumed the token: %v", err)
	}
	refused := errors.New("the join is refused")
	if _, err := Redeem(ctx, st, jt.Id, t0, func(tx *store.Tx) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("Redeem with a refused record: %v, want the refusal", err)
	}
	node := &api.Node{Id: "n2", Meta: &api.Meta{}, Hostname: "w1"}
	if _, err := Redeem(ctx, st, jt.Id, t0, func(tx *store.Tx) error { return tx.Create(node) }); err != nil {
		t.Fatalf("Redeem after a refused record: %v; the refusal must leave the token", err)
	}
	st.View(func(tx store.ReadTx) {
		if tx.GetNode("n2") == nil || tx.GetJoinToken(jt.Id).ConsumedAt == nil {
			t.Errorf("after Redeem: node %v, token %v; want both written", tx.GetNode("n2"), tx.GetJoinToken(jt.Id))
		}
	})
	if _, err := Find(st, text, t0); !errors.Is(err, ErrConsumed) {
		t.Fatalf("Find after Redeem: %v, want ErrConsumed", err)
	}
	if _, err := Redeem(ctx, st, jt.Id, t0, nil); !errors.Is(err, ErrConsumed) {
		t.Fatalf("Redeem again: %v, want ErrConsumed", err)
	}
}

// TestTokensFollowTheCA: a token names the CA the cluster has when it is
// issued, also after the CA changed (the fingerprint is cached).
func TestTokensFollowTheCA(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	for round := range 2 {
		var c *api.Cluster
		st.View(func(tx store.ReadTx) { c = tx.Cluster() })
		want, err := token.Fingerprint(c.CaCertPem)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			text, _, err := Issue(ctx, st, api.NodeRole_NODE_ROLE_WORKER, time.Hour, t0)
			if err != nil {
				t.Fatal(err)
			}
			tok, err := token.Parse(text)
			if err != nil || tok.CAFingerprint != want {
				t.Fatalf("round %d: token pins %q (%v), want the cluster's CA %s", round, tok.CAFingerprint, err, want)
			}
		}
		caCert, caKey, err := ca.NewRootCA("c1")
		if err != nil {
			t.Fatal(err)
		}
		err = st.Update(ctx, func(tx *store.Tx) error {
			c := tx.Cluster()
			c.CaCertPem, c.CaKeyPem = caCert, caKey
			return tx.Update(c)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// One sweep deletes at most maxSweep tokens; the next takes the rest.
func TestSweepBoundsOneWrite(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	storeTokens(t, st, maxSweep+5, time.Minute)
	for _, want := range []int{maxSweep, 5, 0} {
		if n, err := Sweep(ctx, st, t0.Add(2*time.Hour), time.Hour); err != nil || n != want {
			t.Fatalf("Sweep = %d, %v; want %d", n, err, want)
		}
	}
}

// storeTokens stores n tokens issued at t0 that expire ttl later, in
// writes of up to 1 000.
func storeTokens(tb testing.TB, st *store.Store, n int, ttl time.Duration) {
	tb.Helper()
	for n > 0 {
		batch := min(n, 1000)
		err := st.Update(context.Background(), func(tx *store.Tx) error {
			for i := range batch {
				jt := &api.JoinToken{
					Id:        fmt.Sprintf("t%d-%d", n, i),
					Meta:      &api.Meta{},
					Hash:      []byte(fmt.Sprintf("hash-%d-%d", n, i)),
					Role:      api.NodeRole_NODE_ROLE_WORKER,
					ExpiresAt: timestamppb.New(t0.Add(ttl)),
				}
				if err := tx.Create(jt); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
		n -= batch
	}
}

// BenchmarkSweepNoneSpent is the leader's sweep every minute over 100 000
// tokens of which none is spent: what it costs to find nothing.
func BenchmarkSweepNoneSpent(b *testing.B) {
	st := newStore(b)
	storeTokens(b, st, 100_000, 48*time.Hour)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if n, err := Sweep(ctx, st, t0.Add(time.Hour), time.Hour); err != nil || n != 0 {
			b.Fatalf("Sweep = %d, %v; want 0", n, err)
		}
	}
}
