package integration

import (
	"fmt"
	"testing"
	"time"
)

// TestIngressRoutingMesh tests the routing mesh end to end: web publishes 8080
// through the routing mesh with replicas on w2 and w3 only; a client
// outside the cluster (a host on the same underlay that runs no jacod)
// gets answers from both replicas through w1's port, where no replica
// runs; cut off from every other node, w2 keeps serving its port from its
// own replica (docs/adr/0026).
func TestIngressRoutingMesh(t *testing.T) {
	t.Parallel()
	c := newContainerCluster(t, 3)
	client := c.hub.addHost(t)
	c.createService(t, "web", []string{"--replicas", "2", "-p", "8080:80",
		"--constraint", "node.hostname!=w1", "--constraint", "node.hostname!=m1"}, idWebCmd)
	web := c.waitRunning(t, "web", 2, nil)
	if web[0].Node == web[1].Node {
		t.Fatalf("both web replicas on %s; want one on w2 and one on w3: %v", web[0].Node, web)
	}
	ids := map[string]string{} // replica id → node
	for _, r := range web {
		ids[r.ID] = r.Node
	}
	getFrom := func(d *nsDaemon) (string, error) {
		return getIn("/var/run/netns/"+client.ns, d.host.ip+":8080", "/id", 3*time.Second)
	}

	w1, w2 := c.byName("w1"), c.byName("w2")
	seen := map[string]int{}
	eventually(t, 20*time.Second, func() error {
		for range 40 {
			id, err := getFrom(w1)
			if err != nil {
				return fmt.Errorf("w1:8080 (no replica there): %w", err)
			}
			if _, ok := ids[id]; !ok {
				return fmt.Errorf("w1:8080 answered %q, not a web replica", id)
			}
			seen[id]++
		}
		if len(seen) != 2 {
			return fmt.Errorf("w1:8080 reached %v; want both replicas", seen)
		}
		return nil
	})
	t.Logf("w1:8080, where no replica runs, reached %v", seen)

	// w2 cut off from every node (the client still reaches it): it keeps
	// serving its port from its own replica.
	var own string
	for id, node := range ids {
		if node == "w2" {
			own = id
		}
	}
	var others []*host
	for _, d := range c.all() {
		if d != w2 {
			others = append(others, d.host)
		}
	}
	w2.host.partition(t, others...)
	cut := time.Now()
	eventually(t, 30*time.Second, func() error {
		for i := range 20 {
			id, err := getFrom(w2)
			if err != nil {
				return fmt.Errorf("request %d to w2:8080 after the cut: %w", i, err)
			}
			if id != own {
				return fmt.Errorf("w2:8080 answered from %s, want its own replica %s", id, own)
			}
		}
		return nil
	})
	t.Logf("cut off, w2 served 20 requests in a row from its own replica %v after the cut", time.Since(cut).Round(time.Millisecond))
	w2.host.heal(t)
}
