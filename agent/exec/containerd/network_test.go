package containerd

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/containerdtest"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// get fetches url once (short timeout); it reports the body or the error.
func get(url string) (bool, string) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, err.Error()
	}
	return resp.StatusCode == http.StatusOK && string(b) == indexHTML, fmt.Sprintf("%d %q", resp.StatusCode, b)
}

// A published port reaches the replica from the node: on 127.0.0.1 (portmap
// DNATs locally generated traffic and routes 127/8 to the bridge) and on
// the container's own address.
func TestPublishedPortReachesReplica(t *testing.T) {
	d := containerdtest.Start(t)
	n := newNode(t, d, "node-port")
	port := freePort(t)
	rep := replica(t, n.id, "task-port-1", &api.ServiceSpec{
		Command: []string{"httpd", "-f", "-p", "8080", "-h", "/var/www"},
		Ports:   []*api.PortConfig{{TargetPort: 8080, PublishedPort: port, PublishMode: api.PublishMode_PUBLISH_MODE_HOST}},
	})
	c := start(t, n.rt, rep)
	addr, err := c.Address(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !n.rt.Names().Subnet.Contains(mustAddr(t, addr)) {
		t.Fatalf("address %s outside the node's subnet %s", addr, n.rt.Names().Subnet)
	}
	for _, url := range []string{
		fmt.Sprintf("http://%s:8080/index.html", addr),
		fmt.Sprintf("http://127.0.0.1:%d/index.html", port),
	} {
		waitfor.Holds(t, 20*time.Second, "GET "+url, func() (bool, string) { return get(url) })
	}
	// Unpublished after Remove: the DNAT rule is gone with the network.
	if err := c.Remove(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ok, got := get(fmt.Sprintf("http://127.0.0.1:%d/index.html", port)); ok || !strings.Contains(got, "refused") {
		t.Fatalf("port %d after Remove: %s; want connection refused", port, got)
	}
}
