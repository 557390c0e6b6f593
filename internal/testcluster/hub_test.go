package testcluster

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jaco-project/jaco/internal/testenv"
)

// requireNetns skips t where namespaces cannot run (fails under
// JACO_TEST_STRICT, as in CI).
func requireNetns(t *testing.T) {
	t.Helper()
	if err := Available(); errors.Is(err, ErrUnavailable) {
		testenv.SkipOrFail(t, "%v", err)
	} else if err != nil {
		t.Fatal(err)
	}
}

// dial connects from inside from's namespace to addr, as a client on
// that host would.
func dial(ctx context.Context, from *Host, addr string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := from.Command(ctx, exe)
	cmd.Env = append(os.Environ(), helperEnv+"=dial", "TESTCLUSTER_ADDR="+addr)
	if out, err := cmd.CombinedOutput(); err != nil {
		return errors.New(string(out))
	}
	return nil
}

// TestHubHostsPartition: a process on a host runs in its namespace and
// serves its address to the other hosts of the hub; a partition on
// either side cuts the link and healing restores it; closing the hub
// leaves no namespace behind.
func TestHubHostsPartition(t *testing.T) {
	requireNetns(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hub, err := NewHub(ctx)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = hub.Close(context.Background())
		}
	}()
	server, err := hub.AddHost(ctx)
	if err != nil {
		t.Fatal(err)
	}
	client, err := hub.AddHost(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if server.IP() != "198.18.0.1" || client.IP() != "198.18.0.2" || client.Number() != 2 {
		t.Fatalf("hosts at %s and %s (number %d), want 198.18.0.1 and .2", server.IP(), client.IP(), client.Number())
	}
	p := helper(t, "serve", server.JacodAddr(), server)
	addr, err := p.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if addr != server.JacodAddr() {
		t.Errorf("serves on %s, want %s", addr, server.JacodAddr())
	}
	if err := p.Verify(); err != nil {
		t.Error(err)
	}
	if err := dial(ctx, client, addr); err != nil {
		t.Fatalf("%s cannot reach %s: %v", client.Name(), addr, err)
	}
	for _, side := range []struct{ cut, other *Host }{{client, server}, {server, client}} {
		if err := side.cut.Partition(ctx, side.other); err != nil {
			t.Fatal(err)
		}
		if err := dial(ctx, client, addr); err == nil {
			t.Errorf("%s reached %s across a partition on %s", client.Name(), addr, side.cut.Name())
		}
		if err := side.cut.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		if err := dial(ctx, client, addr); err != nil {
			t.Errorf("%s cannot reach %s once healed: %v", client.Name(), addr, err)
		}
	}
	if err := p.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	spare, err := hub.SpareIP()
	if err != nil || spare != "198.18.0.3" {
		t.Errorf("SpareIP = %q, %v; want 198.18.0.3", spare, err)
	}
	if err := client.Close(ctx); err != nil {
		t.Error(err)
	}
	closed = true
	if err := hub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{hub.Name(), server.Name(), client.Name()} {
		if ok, err := NamespaceExists(ctx, ns); err != nil || ok {
			t.Errorf("namespace %s exists (%v) after Close", ns, err)
		}
	}
	if _, err := hub.AddHost(ctx); err == nil {
		t.Error("AddHost on a closed hub succeeded")
	}
}

// TestSweepDeletesDeadRunsOnly: a namespace named for a process that no
// longer exists is deleted; one of this run is kept.
func TestSweepDeletesDeadRunsOnly(t *testing.T) {
	requireNetns(t)
	ctx := context.Background()
	// No pid is this large (pid_max is at most 2^22).
	dead := NamespacePrefix + "999999999-abcdef-1"
	mine := runPrefix + "sweep"
	for _, ns := range []string{dead, mine} {
		if err := ipCmd(ctx, "netns", "add", ns); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ipCmd(ctx, "netns", "delete", ns) })
	}
	sweepStale(ctx)
	for ns, want := range map[string]bool{dead: false, mine: true} {
		ok, err := NamespaceExists(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		if ok != want {
			t.Errorf("namespace %s exists: %v after the sweep, want %v (only dead runs' are deleted)", ns, ok, want)
		}
	}
}
