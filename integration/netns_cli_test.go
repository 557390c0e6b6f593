package integration

// The CLI calls the multi-host tests make against a daemon of the
// harness (netns_daemon_test.go): over its unix socket from the root
// namespace, or over TCP from inside another host's namespace.

import (
	"strings"
	"testing"
	"time"
)

// jaco runs the CLI against the daemon's unix socket, from the root
// namespace: no network is involved.
func (d *nsDaemon) jaco(args ...string) result {
	return jaco(nil, append([]string{"--data-dir", d.dir}, args...)...)
}

// jacoFrom runs the CLI over TCP against d from inside client's namespace,
// with the operator token.
func (d *nsDaemon) jacoFrom(client *host, token string, args ...string) result {
	return client.exec([]string{"JACO_TOKEN=" + token}, append([]string{jacoBin, "--server", d.addr()}, args...)...)
}

func (d *nsDaemon) tryStatus() (clusterStatus, error) {
	return decode[clusterStatus](d.jaco("cluster", "status", "--format", "json"))
}

func (d *nsDaemon) tryNodes() ([]nodeEntry, error) {
	return decode[[]nodeEntry](d.jaco("node", "ls", "--format", "json"))
}

// write makes one raft write through d (a join token: the cheapest write
// the product has), giving up after timeout.
func (d *nsDaemon) write(timeout time.Duration) error {
	return d.jaco("--timeout", timeout.String(), "node", "issue-join-token", "--role", "worker").err()
}

// joinToken mints a join token for role through d.
func (d *nsDaemon) joinToken(t testing.TB, role string, extra ...string) string {
	t.Helper()
	r := wantOK(t, d.jaco(append([]string{"node", "issue-join-token", "--role", role}, extra...)...))
	return strings.TrimSpace(r.stdout)
}

// join makes d join the cluster through peer with token.
func (d *nsDaemon) join(peer *nsDaemon, token string, extra ...string) result {
	return d.jaco(append(extra, "node", "join", "--peer", peer.addr(), "--token", token)...)
}

// initCluster runs `cluster init --quiet` on d and returns the operator
// token.
func (d *nsDaemon) initCluster(t testing.TB, flags ...string) string {
	t.Helper()
	r := wantOK(t, d.jaco(append([]string{"cluster", "init", "--quiet"}, flags...)...))
	tok := strings.TrimSpace(r.stdout)
	if !tokenPattern.MatchString(tok) {
		t.Fatalf("cluster init --quiet on %s printed %q, want a token", d.name, r.stdout)
	}
	return tok
}
