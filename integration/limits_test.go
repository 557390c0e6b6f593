package integration

import (
	"strings"
	"testing"
)

// TestReplicaLimit: a service asking for more replicas than the cluster's
// limit is refused limit_exceeded, naming the field and the limit, and
// nothing is created; `jaco cluster update --max-replicas-per-service`
// moves the limit. Before there was one, `service create --replicas
// 1000000` was accepted and took the leader from 57 MiB to 8 GiB
// (docs/adr/0022).
func TestReplicaLimit(t *testing.T) {
	t.Parallel()
	m := startDaemon(t, "m")
	m.initQuiet()
	// The replicas stay pending, with no node to run on.
	wantOK(t, m.jaco("node", "update", "--availability", "pause", "m"))
	const image = "jaco.local/none:latest"
	wantRefusal := func(r result, word, says string) {
		t.Helper()
		wantError(t, r, 1, word)
		if !strings.Contains(r.stderr, says) {
			t.Errorf("%s: %q does not say %q", strings.Join(r.args, " "), r.stderr, says)
		}
	}

	wantRefusal(m.jaco("service", "create", "-d", "--name", "huge", "--replicas", "1000000", image),
		"limit_exceeded", "replicas 1000000 is over the cluster's max_replicas_per_service 10000")
	svcs, err := decode[[]struct{ Name string }](m.jaco("service", "ls", "--format", "json"))
	if err != nil || len(svcs) != 0 {
		t.Fatalf("service ls after the refusal: %v, %v; want no service", svcs, err)
	}

	if out := wantOK(t, m.jaco("cluster", "update", "--max-replicas-per-service", "5")).stdout; out != "Max replicas per service: 5.\n" {
		t.Fatalf("cluster update --max-replicas-per-service 5 printed %q", out)
	}
	wantRefusal(m.jaco("service", "create", "-d", "--name", "web", "--replicas", "6", image),
		"limit_exceeded", "max_replicas_per_service 5")
	wantOK(t, m.jaco("service", "create", "-d", "--name", "web", "--replicas", "5", image))
	wantRefusal(m.jaco("service", "scale", "-d", "web=6"), "limit_exceeded", "replicas 6")
	wantRefusal(m.jaco("cluster", "update", "--max-replicas-per-service", "0"), "invalid_spec", "max_replicas_per_service 0")

	// The count of services is a setting too.
	if out := wantOK(t, m.jaco("cluster", "update", "--max-services", "1")).stdout; out != "Max services: 1.\n" {
		t.Fatalf("cluster update --max-services 1 printed %q", out)
	}
	wantRefusal(m.jaco("service", "create", "-d", "--name", "two", image), "limit_exceeded", "max_services is 1")
	wantRefusal(m.jaco("cluster", "update", "--max-services", "0"), "invalid_spec", "max_services 0")
}
