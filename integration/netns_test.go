package integration

// The multi-host harness (docs/design.md §14) is internal/testcluster:
// every jacod runs in its own network namespace, a "host", whose veth
// pair ends on a Linux bridge in a per-test "hub" namespace. Test hosts get
// addresses from 198.18.0.0/25 and are dialled only from inside
// namespaces; the CLI reaches a daemon through its unix socket, which
// needs no network at all. Partitions are nftables drop rules inside a
// host's namespace; a pause is SIGSTOP (the kernel has no netem).
//
// This file adapts it to tests: each helper fails the test instead of
// returning an error and deletes what it made when the test ends.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jaco-project/jaco/internal/testcluster"
	"github.com/jaco-project/jaco/internal/testenv"
)

// jacodPort is where every test daemon listens.
const jacodPort = testcluster.JacodPort

// netnsTimeout bounds one namespace operation: an `ip` or `nft` call.
const netnsTimeout = cmdTimeout

// netnsCtx is the context of one namespace operation.
func netnsCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), netnsTimeout)
}

// requireNetns skips t when this machine cannot run the multi-host suite:
// only when we are not root or `ip netns` does not work. Anything else that
// goes wrong later (creating a namespace, nft) fails the test instead,
// because CI, where we are root, must run these tests, not skip them.
func requireNetns(t testing.TB) {
	t.Helper()
	err := testcluster.Available()
	if errors.Is(err, testcluster.ErrUnavailable) {
		testenv.SkipOrFail(t, "multi-host tests: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
}

// hub is one test's network (testcluster.Hub).
type hub struct {
	*testcluster.Hub
	ns string // the hub's namespace; hosts are named after it
}

// newHub creates a hub whose namespace and everything in it is deleted when
// t ends, pass or fail.
func newHub(t testing.TB) *hub {
	t.Helper()
	requireNetns(t)
	ctx, cancel := netnsCtx()
	defer cancel()
	h, err := testcluster.NewHub(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Registered before any host's, so it runs after all of them (cleanups
	// run last-in first-out): the daemons are gone before the wiring is.
	t.Cleanup(func() {
		ctx, cancel := netnsCtx()
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return &hub{Hub: h, ns: h.Name()}
}

// host is one test machine (testcluster.Host), with the fields the tests
// read.
type host struct {
	h  *testcluster.Host
	ns string
	n  int    // host number within the hub
	ip string // 198.18.0.<n>
}

// addHost plugs a new host into the hub, with the next free address of
// this hub's pool. Its namespace is deleted when t ends.
func (h *hub) addHost(t testing.TB) *host {
	t.Helper()
	ctx, cancel := netnsCtx()
	defer cancel()
	hs, err := h.AddHost(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := netnsCtx()
		defer cancel()
		if err := hs.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return &host{h: hs, ns: hs.Name(), n: hs.Number(), ip: hs.IP()}
}

// spareIP hands out the next address of the hub's pool without a host:
// a second address for a host that moves.
func (h *hub) spareIP(t testing.TB) string {
	t.Helper()
	ip, err := h.SpareIP()
	if err != nil {
		t.Fatal(err)
	}
	return ip
}

// addr is the host's jacod address.
func (hs *host) addr() string { return hs.h.JacodAddr() }

// exec runs a command inside the host's namespace; this is the only way
// the tests send anything to a 198.18.0.x address.
func (hs *host) exec(env []string, args ...string) result {
	return run("ip", env, append([]string{"netns", "exec", hs.ns}, args...)...)
}

// runIP runs `ip -n <host> args...`, failing t if it fails.
func (hs *host) runIP(t testing.TB, args ...string) {
	t.Helper()
	ctx, cancel := netnsCtx()
	defer cancel()
	if err := hs.h.RunIP(ctx, args...); err != nil {
		t.Fatal(err)
	}
}

// partition makes hs drop every packet to or from the given hosts
// (testcluster.Host.Partition), replacing an earlier partition of hs.
func (hs *host) partition(t testing.TB, from ...*host) {
	t.Helper()
	others := make([]*testcluster.Host, len(from))
	for i, o := range from {
		others[i] = o.h
	}
	ctx, cancel := netnsCtx()
	defer cancel()
	if err := hs.h.Partition(ctx, others...); err != nil {
		t.Fatal(err)
	}
}

// heal removes hs's partition, if any.
func (hs *host) heal(t testing.TB) {
	t.Helper()
	ctx, cancel := netnsCtx()
	defer cancel()
	if err := hs.h.Heal(ctx); err != nil {
		t.Fatal(err)
	}
}

// nft loads ruleset into hs's namespace.
func (hs *host) nft(t testing.TB, ruleset string) {
	t.Helper()
	ctx, cancel := netnsCtx()
	defer cancel()
	if err := hs.h.NFT(ctx, ruleset); err != nil {
		t.Fatal(err)
	}
}

// within is a context for an operation that must finish within d.
func within(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
