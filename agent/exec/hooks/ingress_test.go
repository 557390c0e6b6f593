package hooks

import (
	"net/netip"
	osexec "os/exec"
	"testing"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
)

// A bundle publishing a port through the routing mesh joins the ingress
// network (api.TaskNetworks), even when its spec names no network; one
// publishing in host mode only stays on the host.
func TestIngressPortJoinsTheIngressNetwork(t *testing.T) {
	env := newNetEnv(t)
	in := testAttachment()
	in.NetworkID, in.Network, in.Bridge = "ni", api.IngressNetwork, "jhi"
	in.Subnet = netip.MustParsePrefix("10.30.0.0/16")
	in.Block = netip.MustParsePrefix("10.30.1.0/26")
	in.Gateway = netip.MustParseAddr("10.30.1.1")
	env.nets[in.Network] = in
	t.Cleanup(func() { _ = osexec.Command("ip", "link", "del", in.Bridge).Run() })
	rt := env.runtime(t)

	rep := newReplica(t, map[string]string{"launch": "#!/bin/sh\nexit 0\n"}, func(s *api.ServiceSpec) {
		s.Ports = []*api.PortConfig{{TargetPort: 8080, PublishedPort: 18080}}
	})
	c := controllerFor(t, rt, rep)
	prepareAndStart(t, c)
	waitExit(t, c)
	ctx := testContext(t)
	got, err := c.(exec.Networked).NetworkAddresses(ctx)
	if err != nil || len(got) != 1 || got[0].NetworkID != "ni" || !in.Block.Contains(got[0].Addr) {
		t.Fatalf("NetworkAddresses = %v, %v; want one in the ingress block %s", got, err, in.Block)
	}
	if err := c.Remove(ctx); err != nil {
		t.Fatalf("Remove: %v", err)
	}

	host := newReplica(t, map[string]string{"launch": "#!/bin/sh\nexit 0\n"}, func(s *api.ServiceSpec) {
		s.Ports = []*api.PortConfig{{TargetPort: 8080, PublishedPort: 18081, PublishMode: api.PublishMode_PUBLISH_MODE_HOST}}
	})
	c = controllerFor(t, rt, host)
	prepareAndStart(t, c)
	waitExit(t, c)
	if got, err := c.(exec.Networked).NetworkAddresses(ctx); err != nil || len(got) != 0 {
		t.Errorf("host-mode port: NetworkAddresses = %v, %v; want none (on the host)", got, err)
	}
	if addr, err := c.Address(ctx); err != nil || addr != "127.0.0.1" {
		t.Errorf("host-mode port: Address = %q, %v; want 127.0.0.1", addr, err)
	}
}
