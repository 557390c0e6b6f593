package integration

// Service network isolation on a real node (docs/design.md §9): a
// worker running replicas of three services under containerd, each node's
// nftables ruleset loaded by its jacod. Connections are made from inside
// the replicas' own network namespaces, not through jaco.

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/pkg/namespaces"
	"golang.org/x/sys/unix"

	ctrd "github.com/jaco-project/jaco/agent/exec/containerd"
)

func TestIsolation(t *testing.T) {
	t.Parallel()
	c := newContainerCluster(t, 1)

	nodes, err := c.nodeStates()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Hostname == "w1" && n.State != "ready" {
			t.Fatalf("w1 state %q (%s), want ready: its ruleset should have loaded", n.State, n.StateMessage)
		}
	}

	c.createService(t, "db", []string{"--replicas", "1", "--health-tcp", "80"}, webCmd)
	c.createService(t, "web", []string{"--replicas", "2", "--depends-on", "db"}, webCmd)
	c.createService(t, "other", []string{"--replicas", "1"}, webCmd)
	db := c.replicaNets(t, "db", 1)[0]
	web := c.replicaNets(t, "web", 2)
	other := c.replicaNets(t, "other", 1)[0]

	for _, tc := range []struct {
		name     string
		from, to replicaNet
		want     bool
	}{
		{"same service", web[0], web[1], true},
		{"dependent to its dependency", web[1], db, true},
		{"dependency to its dependent", db, web[0], false},
		{"unrelated service to web", other, web[0], false},
		{"unrelated service to db", other, db, false},
		{"web to an unrelated service", web[0], other, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := dialFromReplica(tc.from, tc.to.addr+":80")
			if got := err == nil; got != tc.want {
				t.Errorf("%s (%s) connects to %s (%s): %v (err %v), want %v", tc.from.service, tc.from.addr, tc.to.service, tc.to.addr, got, err, tc.want)
			}
		})
	}
}

// nodeLine is one node of `jaco node ls --format json`: its state, and
// why when it cannot run replicas.
type nodeLine struct {
	Hostname     string `json:"hostname"`
	State        string `json:"state"`
	StateMessage string `json:"state_message"`
}

// nodeStates lists the nodes' states as the manager sees them.
func (c *ccluster) nodeStates() ([]nodeLine, error) {
	return decode[[]nodeLine](c.manager.jaco("node", "ls", "--format", "json"))
}

// replicaNet is where one replica's network lives.
type replicaNet struct {
	service string
	netns   string // the network namespace's bind mount
	addr    string // its address on the node's bridge
}

// replicaNets waits for n running replicas of svc and finds each one's
// network namespace (from its container's spec) and address (eth0 in it).
func (c *ccluster) replicaNets(t testing.TB, svc string, n int) []replicaNet {
	t.Helper()
	var out []replicaNet
	for _, r := range c.waitRunning(t, svc, n, nil) {
		rn, err := c.replicaNet(svc, r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rn)
	}
	return out
}

func (c *ccluster) replicaNet(svc string, r replica) (replicaNet, error) {
	names, err := ctrd.NamesFor(c.nodeIDs[r.Node], "")
	if err != nil {
		return replicaNet{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = namespaces.WithNamespace(ctx, names.Namespace)
	ct, err := c.client.LoadContainer(ctx, r.ID)
	if err != nil {
		return replicaNet{}, fmt.Errorf("container of %v: %w", r, err)
	}
	spec, err := ct.Spec(ctx)
	if err != nil {
		return replicaNet{}, fmt.Errorf("spec of %v: %w", r, err)
	}
	rn := replicaNet{service: svc}
	for _, ns := range spec.Linux.Namespaces {
		if ns.Type == "network" {
			rn.netns = ns.Path
		}
	}
	if rn.netns == "" {
		return rn, fmt.Errorf("%v: no network namespace in its spec", r)
	}
	err = inNetns(rn.netns, func() error {
		ifc, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
				rn.addr = ipn.IP.String()
				return nil
			}
		}
		return fmt.Errorf("eth0 has no IPv4 address: %v", addrs)
	})
	if err != nil {
		return rn, fmt.Errorf("address of %v: %w", r, err)
	}
	return rn, nil
}

// dialFromReplica opens (and closes) a TCP connection to addr from inside
// the replica's network namespace; a dropped SYN fails it in 2 s.
func dialFromReplica(from replicaNet, addr string) error {
	conn, err := dialIn(from.netns, addr, 2*time.Second)
	if err != nil {
		return err
	}
	// Prove the connection carries data: the page, not just a handshake.
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("GET / HTTP/1.0\r\n\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	var got strings.Builder
	for {
		n, err := conn.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if !strings.Contains(got.String(), indexPage) {
		return fmt.Errorf("answer from %s lacks the page: %q", addr, got.String())
	}
	return nil
}

// inNetns runs f on a thread moved into the network namespace at path
// (sockets keep the namespace they were made in), moving it back after.
//
// A thread that cannot move back stays locked to this goroutine and ends
// with it (moving back cannot fail for a root process holding the original
// namespace open). Ending a thread is harmless to the daemons, although
// the kernel ties their Pdeathsig to the thread that forked them:
// internal/testcluster forks each from a thread of its own.
func inNetns(path string, f func() error) error {
	runtime.LockOSThread()
	restored := false
	defer func() {
		if restored {
			runtime.UnlockOSThread()
		}
	}()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		restored = true
		return err
	}
	defer orig.Close()
	target, err := os.Open(path)
	if err != nil {
		restored = true
		return err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		restored = true
		return fmt.Errorf("enter network namespace %s: %w", path, err)
	}
	ferr := f()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("leave network namespace %s: %w", path, err)
	}
	restored = true
	return ferr
}
