package integration

// Tests of the multi-host harness itself (netns_test.go,
// netns_daemon_test.go), so a multi-host test that fails can be trusted to
// have failed in jaco rather than in the harness.

import (
	"testing"
	"time"

	"github.com/jaco-project/jaco/internal/testcluster"
)

// namespaceExists reports whether `ip netns list` shows ns.
func namespaceExists(t testing.TB, ns string) bool {
	t.Helper()
	ctx, cancel := netnsCtx()
	defer cancel()
	ok, err := testcluster.NamespaceExists(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestNetnsHarness checks the harness itself, so a multi-host test that
// fails can be trusted to have failed in jaco: the pid we signal is jacod
// in its host's namespace, SIGSTOP and SIGCONT act, an nftables partition
// cuts a host off and healing restores it, and everything is gone once
// the test that made it ends.
func TestNetnsHarness(t *testing.T) {
	t.Parallel()
	var namespaces []string
	var d *nsDaemon
	t.Run("host", func(t *testing.T) {
		hb := newHub(t)
		server, client := hb.addHost(t), hb.addHost(t)
		namespaces = []string{hb.ns, server.ns, client.ns}
		d = server.startJacod(t, "server") // start checks pid and namespace
		token := d.initCluster(t)

		reach := func() result { return d.jacoFrom(client, token, "--timeout", "2s", "node", "ls") }
		wantOK(t, reach())
		client.partition(t, server)
		if r := reach(); r.code == 0 {
			t.Fatalf("%s reached %s across a partition", client.ns, d.addr())
		}
		client.heal(t)
		eventually(t, 10*time.Second, func() error { return reach().err() })
		// A partition on the server's side cuts the same link.
		server.partition(t, client)
		if r := reach(); r.code == 0 {
			t.Fatalf("%s reached %s across a partition on the server's side", client.ns, d.addr())
		}
		server.heal(t)
		eventually(t, 10*time.Second, func() error { return reach().err() })

		d.pause(t)
		if r := d.jaco("--timeout", "1s", "cluster", "status"); r.code == 0 {
			t.Fatalf("a SIGSTOPped jacod answered: %s", r.stdout)
		}
		d.resume(t)
		eventually(t, 10*time.Second, func() error { return d.jaco("cluster", "status").err() })
	})
	if t.Failed() {
		return
	}
	if d.running() {
		t.Errorf("jacod (pid %d) still runs after its test ended", d.pid())
	}
	for _, ns := range namespaces {
		if namespaceExists(t, ns) {
			t.Errorf("network namespace %s still exists after its test ended", ns)
		}
	}
}

// TestNetnsHubsIsolated: two hubs whose hosts have the same addresses are
// separate networks. From each hub's 198.18.0.1, 198.18.0.2 is that hub's
// own daemon (its own cluster), never the other hub's; this is what lets
// parallel tests reuse addresses.
func TestNetnsHubsIsolated(t *testing.T) {
	t.Parallel()
	type side struct {
		client *host
		d      *nsDaemon
		token  string
	}
	var sides []side
	for _, name := range []string{"a", "b"} {
		hb := newHub(t)
		client, server := hb.addHost(t), hb.addHost(t)
		if client.ip != "198.18.0.1" || server.ip != "198.18.0.2" {
			t.Fatalf("hub %s handed out %s and %s, want 198.18.0.1 and .2", name, client.ip, server.ip)
		}
		d := server.startJacod(t, name)
		sides = append(sides, side{client, d, d.initCluster(t)})
	}
	for i, s := range sides {
		want, err := s.d.tryStatus()
		if err != nil {
			t.Fatal(err)
		}
		got, err := decode[clusterStatus](s.d.jacoFrom(s.client, s.token, "cluster", "status", "--format", "json"))
		if err != nil {
			t.Fatalf("hub %d: status over TCP from %s: %v", i, s.client.ns, err)
		}
		if got.ClusterID != want.ClusterID {
			t.Errorf("hub %d: 198.18.0.2 answers for cluster %s, want its own %s", i, got.ClusterID, want.ClusterID)
		}
		// The other hub's token names the other hub's CA: the daemon this
		// hub reaches at 198.18.0.2 cannot prove it, so the client refuses:
		// ca_mismatch, not unavailable (docs/design.md §11).
		other := sides[1-i]
		wantError(t, s.d.jacoFrom(s.client, other.token, "--timeout", "3s", "cluster", "status"), 1, "ca_mismatch")
	}
}
