package membership

import (
	"context"
	"encoding/pem"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/jointoken"
	"github.com/jaco-project/jaco/manager/state/store"
)

func issue(t *testing.T, st *store.Store, role api.NodeRole) string {
	t.Helper()
	text, _, err := jointoken.Issue(context.Background(), st, role, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// tamperedCSR is a well-formed certificate request whose signature does
// not verify.
func tamperedCSR(t *testing.T) []byte {
	t.Helper()
	b, _ := pem.Decode(csr(t))
	der := append([]byte(nil), b.Bytes...)
	der[len(der)-1] ^= 0xff // the last byte is the signature's
	return pem.EncodeToMemory(&pem.Block{Type: b.Type, Bytes: der})
}

// joinsLeft checks that token still admits a valid join.
func joinsLeft(t *testing.T, s *Server, st *store.Store, token string, role api.NodeRole) {
	t.Helper()
	resp, err := s.Join(context.Background(), &api.JoinRequest{Token: token, Hostname: "after-refusals", Address: "z:7000", CsrPem: csr(t)})
	if err != nil {
		t.Fatalf("a valid join with the token after refused ones: %v; a refused join must not consume it", err)
	}
	if n := node(st, "after-refusals"); n == nil || n.Id != resp.NodeId || n.Role != role {
		t.Fatalf("joined %v, recorded %v", resp, n)
	}
}

func TestJoinWithABadCertificateRequestKeepsTheToken(t *testing.T) {
	for _, role := range []api.NodeRole{api.NodeRole_NODE_ROLE_WORKER, api.NodeRole_NODE_ROLE_MANAGER} {
		s, r, st := admitServer(t)
		token := issue(t, st, role)
		for name, bad := range map[string][]byte{
			"garbage":            []byte("not a certificate request"),
			"a certificate":      []byte("-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n"),
			"a broken signature": tamperedCSR(t),
		} {
			_, err := s.Join(context.Background(), &api.JoinRequest{Token: token, Hostname: "w1", Address: "b:7000", CsrPem: bad})
			if reason.Of(err) != reason.InvalidSpec {
				t.Errorf("%v, %s: %v, want invalid_spec", role, name, err)
			}
		}
		if node(st, "w1") != nil || len(r.calls) != 0 {
			t.Fatalf("%v: refused joins changed something: node %v, raft calls %v", role, node(st, "w1"), r.calls)
		}
		joinsLeft(t, s, st, token, role)
	}
}

var badNames = map[string]string{
	"empty":           "",
	"newline":         "w1\nw2",
	"escape sequence": "w\x1b[2J\x1b[31mred",
	"emoji":           "w😀",
	"1 MiB":           strings.Repeat("a", 1<<20),
	"underscore":      "w_1",
	"leading dash":    "-w",
}

func TestJoinRefusesBadNodeNames(t *testing.T) {
	s, r, st := admitServer(t)
	token := issue(t, st, api.NodeRole_NODE_ROLE_MANAGER)
	for name, bad := range badNames {
		_, err := s.Join(context.Background(), &api.JoinRequest{Token: token, Hostname: bad, Address: "b:7000", CsrPem: csr(t)})
		if reason.Of(err) != reason.InvalidSpec || !strings.Contains(reason.Sentence(err), "hostname") {
			t.Errorf("%s: %v, want invalid_spec naming the hostname", name, err)
		}
		if len(reason.Sentence(err)) > 1000 {
			t.Errorf("%s: the refusal is %d bytes long", name, len(reason.Sentence(err)))
		}
	}
	st.View(func(tx store.ReadTx) {
		if n := len(tx.ListNodes()); n != 1 {
			t.Errorf("%d nodes after refused joins, want the 1 there was", n)
		}
	})
	if len(r.calls) != 0 {
		t.Fatalf("refused joins changed raft: %v", r.calls)
	}
	joinsLeft(t, s, st, token, api.NodeRole_NODE_ROLE_MANAGER)
}

func TestJoinAcceptsHostNames(t *testing.T) {
	s, _, st := admitServer(t)
	for _, name := range []string{"w1", "jaco-0", "node.example.com", "Worker-7"} {
		token := issue(t, st, api.NodeRole_NODE_ROLE_WORKER)
		if _, err := s.Join(context.Background(), &api.JoinRequest{Token: token, Hostname: name, Address: "b:7000", CsrPem: csr(t)}); err != nil {
			t.Errorf("join as %q: %v", name, err)
		}
	}
}

func TestAdmitRefusesBadNodeNames(t *testing.T) {
	s, r, st := admitServer(t)
	for name, bad := range badNames {
		_, err := s.Admit(asManager, &api.AdmitRequest{Hostname: bad, Address: "b:7000", CsrPem: csr(t)})
		if reason.Of(err) != reason.InvalidSpec {
			t.Errorf("%s: %v, want invalid_spec", name, err)
		}
	}
	st.View(func(tx store.ReadTx) {
		if n := len(tx.ListNodes()); n != 1 {
			t.Errorf("%d nodes after refused admissions, want the 1 there was", n)
		}
	})
	if len(r.calls) != 0 {
		t.Fatalf("refused admissions changed raft: %v", r.calls)
	}
}

// A join that fails after validation (raft could not add the learner)
// leaves the token for the retry.
func TestJoinThatFailsInRaftKeepsTheToken(t *testing.T) {
	s, r, st := admitServer(t)
	token := issue(t, st, api.NodeRole_NODE_ROLE_MANAGER)
	r.addErr = errors.New("raft is busy")
	if _, err := s.Join(context.Background(), &api.JoinRequest{Token: token, Hostname: "m3", Address: "b:7000", CsrPem: csr(t)}); err == nil {
		t.Fatal("join succeeded with raft refusing the learner")
	}
	if node(st, "m3") != nil {
		t.Fatal("a join raft refused was recorded")
	}
	r.addErr = nil
	joinsLeft(t, s, st, token, api.NodeRole_NODE_ROLE_MANAGER)
}

// Of two joins racing with one token, one is admitted; the other is told
// token_consumed and leaves nothing behind, in raft or in the store. Here
// the second join gets in while the first adds its nonvoter: the first
// loses at its commit and takes its nonvoter out again.
func TestJoinsRacingWithOneTokenLeaveNoHalfJoin(t *testing.T) {
	s, r, st := admitServer(t)
	token := issue(t, st, api.NodeRole_NODE_ROLE_MANAGER)
	var inner error
	r.onAdd = func() {
		r.onAdd = nil
		_, inner = s.Join(context.Background(), &api.JoinRequest{Token: token, Hostname: "m4", Address: "d:7000", CsrPem: csr(t)})
	}
	_, outer := s.Join(context.Background(), &api.JoinRequest{Token: token, Hostname: "m3", Address: "c:7000", CsrPem: csr(t)})
	if inner != nil || reason.Of(outer) != reason.TokenConsumed {
		t.Fatalf("joins racing with one token: first %v, second %v; want the second admitted, the first token_consumed", outer, inner)
	}
	if !slices.Equal(r.calls, []string{"add d:7000", "add c:7000", "remove c:7000"}) {
		t.Fatalf("raft calls %v, want the loser's nonvoter removed", r.calls)
	}
	nodes := map[string]bool{}
	st.View(func(tx store.ReadTx) {
		for _, n := range tx.ListNodes() {
			nodes[n.Id] = true
		}
	})
	for _, m := range r.Members() {
		if m.NodeId != "n1" && !nodes[m.NodeId] {
			t.Errorf("raft member %x (%s) has no node: a half-done join", m.RaftId, m.Address)
		}
	}
	if len(nodes) != 2 {
		t.Fatalf("%d nodes, want the 1 there was and the admitted one", len(nodes))
	}
}
