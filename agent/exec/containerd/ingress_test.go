package containerd

import (
	"context"
	"fmt"
	"net/netip"
	osexec "os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/containerdtest"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// Only host-mode ports are CNI's portmap's: ingress ports (the default
// mode) are the routing mesh's, published by every node's rules.
func TestPortMappingsAreHostModeOnly(t *testing.T) {
	spec := &api.ServiceSpec{Ports: []*api.PortConfig{
		{TargetPort: 80, PublishedPort: 8080},
		{TargetPort: 81, PublishedPort: 8081, PublishMode: api.PublishMode_PUBLISH_MODE_INGRESS},
		{Protocol: "UDP", TargetPort: 53, PublishedPort: 5353, PublishMode: api.PublishMode_PUBLISH_MODE_HOST},
		{TargetPort: 82}, // not published
	}}
	got := portMappings(spec)
	if len(got) != 1 || got[0].HostPort != 5353 || got[0].ContainerPort != 53 || got[0].Protocol != "udp" {
		t.Errorf("port mappings %+v, want only udp 5353 → 53", got)
	}
}

// ingressAtt is the mesh's network on the test node.
func ingressAtt(t *testing.T) exec.Attachment {
	att := exec.Attachment{
		NetworkID: "netingress0000000000000001",
		Network:   api.IngressNetwork,
		Subnet:    netip.MustParsePrefix("10.0.0.0/16"),
		Block:     netip.MustParsePrefix("10.0.0.64/26"),
		Gateway:   netip.MustParseAddr("10.0.0.65"),
		Bridge:    "jntestingress",
		MTU:       1420,
	}
	t.Cleanup(func() { _ = osexec.Command("ip", "link", "del", att.Bridge).Run() })
	return att
}

// A replica publishing an ingress port joins the ingress network after
// its spec's (eth2 here), reports its address there, and gets no
// portmap rule for it; a runtime without networks refuses it.
func TestIngressPortJoinsTheIngressNetwork(t *testing.T) {
	d := containerdtest.Start(t)
	back, in := backend(t), ingressAtt(t)
	port := freePort(t)
	spec := httpdOn("backend")
	spec.Ports = []*api.PortConfig{{TargetPort: 8080, PublishedPort: port}}

	plain := newNode(t, d, "node-in-plain")
	c, err := plain.rt.Controller(replica(t, plain.id, "task-in-refused", spec))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Prepare(context.Background()); err == nil || !strings.Contains(err.Error(), "no overlay networks") {
		t.Fatalf("prepare of an ingress port without WithNetworks = %v, want a refusal", err)
	}

	nets := &fakeNetworks{atts: map[string]exec.Attachment{"backend": back, api.IngressNetwork: in}}
	n := newNode(t, d, "node-in", WithNetworks(nets))
	c = start(t, n.rt, replica(t, n.id, "task-in", spec))
	addrs, err := c.(exec.Networked).NetworkAddresses(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(addrs) != 2 || addrs[0].NetworkID != back.NetworkID || addrs[1].NetworkID != in.NetworkID || !in.Block.Contains(addrs[1].Addr) {
		t.Fatalf("network addresses %+v: want backend's, then one in the ingress block %s", addrs, in.Block)
	}
	url := fmt.Sprintf("http://%s:8080/index.html", addrs[1].Addr)
	waitfor.Holds(t, 20*time.Second, "GET "+url+" from the node over the ingress bridge", func() (bool, string) { return get(url) })
	if !execOK(t, c, "sh", "-c", fmt.Sprintf("ip -4 addr show dev eth2 | grep -q 'inet %s/26'", addrs[1].Addr)) {
		t.Error("replica lacks eth2 with its ingress address")
	}
	// The resolver stays the spec's first network's.
	if !execOK(t, c, "grep", "-q", "nameserver "+back.Gateway.String(), "/etc/resolv.conf") {
		t.Error("resolv.conf does not name the backend network's gateway")
	}
	if ok, got := get(fmt.Sprintf("http://127.0.0.1:%d/index.html", port)); ok || !strings.Contains(got, "refused") {
		t.Errorf("ingress port %d on the node's loopback: %s; want no portmap rule (refused)", port, got)
	}
}
