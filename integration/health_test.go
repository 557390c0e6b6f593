package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// probe asks d's health service over TCP as a supervisor would: TLS
// without a client certificate or token.
func probe(d *daemon, service string) (string, error) {
	conn, err := grpc.NewClient(d.addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return "", err
	}
	return resp.Status.String(), nil
}

func wantHealth(t testing.TB, d *daemon, service, want string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		got, err := probe(d, service)
		if err == nil && got != want {
			err = fmt.Errorf("%s %s is %s, want %s", d.name, service, got, want)
		}
		return err
	})
}

// TestHealth: liveness is SERVING for the life of the process, before init
// and through a quorum loss; readiness is SERVING while the node sees a
// leader (a manager its raft leader, a worker a dispatcher session).
func TestHealth(t *testing.T) {
	t.Parallel()
	ms := []*daemon{startDaemon(t, "m1"), startDaemon(t, "m2"), startDaemon(t, "m3")}
	w := startDaemon(t, "w")
	wantHealth(t, ms[0], "jaco.liveness", "SERVING")
	wantHealth(t, ms[0], "", "SERVING")
	wantHealth(t, ms[0], "jaco.readiness", "NOT_SERVING")
	if _, err := probe(ms[0], "nonsense"); err == nil {
		t.Fatal("an unknown health service answered")
	}

	ms[0].initQuiet()
	for _, m := range ms[1:] {
		wantOK(t, m.jaco("node", "join", "--peer", ms[0].addr, "--token", ms[0].joinToken("manager")))
	}
	wantOK(t, w.jaco("node", "join", "--peer", ms[0].addr, "--token", ms[0].joinToken("worker")))
	for _, m := range ms {
		waitVoters(t, m, 3, 3)
		wantHealth(t, m, "jaco.readiness", "SERVING")
	}
	wantHealth(t, w, "jaco.readiness", "SERVING")

	t.Log("quorum lost: nobody sees a leader, everybody stays alive")
	ms[1].kill()
	ms[2].kill()
	wantHealth(t, ms[0], "jaco.readiness", "NOT_SERVING")
	wantHealth(t, w, "jaco.readiness", "NOT_SERVING")
	wantHealth(t, ms[0], "jaco.liveness", "SERVING")
	wantHealth(t, w, "jaco.liveness", "SERVING")

	ms[1].start()
	wantHealth(t, ms[0], "jaco.readiness", "SERVING")
	wantHealth(t, w, "jaco.readiness", "SERVING")
}
