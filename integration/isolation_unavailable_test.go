package integration

// A node that cannot isolate service networks (docs/design.md §9):
// a worker whose jacod lacks CAP_NET_ADMIN cannot load its nftables
// ruleset. It stays a member of the cluster, runs nothing, and says why,
// to the operator (node ls) and in the messages of the replicas it is
// not given.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestIsolationUnavailable(t *testing.T) {
	t.Parallel()
	c := newContainerCluster(t, 1)
	good := c.workers[0]
	bad := c.addWorkerWithoutNetAdmin(t, "w2")

	t.Run("the node is a member and says why it runs nothing", func(t *testing.T) {
		// Ready: its heartbeats arrive; it is not down, only unusable.
		c.waitNodes(t, []*nsDaemon{good, bad}, "ready")
		eventually(t, replicaTimeout, func() error {
			nodes, err := c.nodeStates()
			if err != nil {
				return err
			}
			i := slices.IndexFunc(nodes, func(n nodeLine) bool { return n.Hostname == bad.name })
			j := slices.IndexFunc(nodes, func(n nodeLine) bool { return n.Hostname == good.name })
			switch {
			case i < 0 || j < 0:
				return fmt.Errorf("node ls lacks %s or %s: %+v", bad.name, good.name, nodes)
			case nodes[i].State != "isolation_unavailable" || nodes[i].StateMessage == "":
				return fmt.Errorf("%s: state %q (%q), want isolation_unavailable with a reason", bad.name, nodes[i].State, nodes[i].StateMessage)
			case nodes[j].State != "ready":
				return fmt.Errorf("%s: state %q (%q), want ready", good.name, nodes[j].State, nodes[j].StateMessage)
			}
			return nil
		})
		// The table says the same, with the reason in the STATE column.
		table := wantOK(t, c.manager.jaco("node", "ls")).stdout
		line := tableLine(table, bad.name)
		if !strings.Contains(line, "isolation_unavailable (") {
			t.Errorf("node ls line of %s lacks %q:\n%s", bad.name, "isolation_unavailable (reason)", table)
		}
		t.Logf("node ls: %s", line)
	})

	t.Run("a replica constrained to it stays pending and says why", func(t *testing.T) {
		c.createService(t, "pinned", []string{"--replicas", "1", "--constraint", "node.hostname==" + bad.name}, idleCmd)
		eventually(t, replicaTimeout, func() error {
			reps, err := c.ps("pinned", false)
			if err != nil {
				return err
			}
			if len(reps) != 1 || reps[0].State != "pending: no_suitable_node" ||
				!strings.Contains(reps[0].Message, "1 node without network isolation") {
				return fmt.Errorf("pinned replicas %v, want one pending: no_suitable_node naming 1 node without network isolation", reps)
			}
			return nil
		})
	})

	t.Run("replicas run on the isolated worker only", func(t *testing.T) {
		c.createService(t, "web", []string{"--replicas", "2"}, webCmd)
		c.waitRunning(t, "web", 2, func(r replica) error {
			if r.Node != good.name {
				return fmt.Errorf("%v is not on %s", r, good.name)
			}
			return nil
		})
		// Not even a stopped container of any service on the bad node.
		cs, err := c.containers(bad.name)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != 0 {
			t.Errorf("%s has containers %+v, want none", bad.name, cs)
		}
	})
}

// addWorkerWithoutNetAdmin starts a worker whose jacod lacks
// CAP_NET_ADMIN, joins it and loads the test image on it.
func (c *ccluster) addWorkerWithoutNetAdmin(t testing.TB, name string) *nsDaemon {
	t.Helper()
	d := c.hub.addHost(t).newJacod(t, name, "--containerd-address", c.ctrd.Address())
	d.dropNetAdmin = true
	d.start(t)
	c.joinWorker(t, d)
	return d
}

// tableLine returns the line of a table whose first columns include the
// word w, or "".
func tableLine(table, w string) string {
	for _, line := range strings.Split(table, "\n") {
		if slices.Contains(strings.Fields(line), w) {
			return line
		}
	}
	return ""
}
