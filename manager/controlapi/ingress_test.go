package controlapi

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/limits"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
)

func published(port, target uint32, proto string, mode api.PublishMode) *api.PortConfig {
	return &api.PortConfig{PublishedPort: port, TargetPort: target, Protocol: proto, PublishMode: mode}
}

const (
	ingressMode = api.PublishMode_PUBLISH_MODE_UNSPECIFIED
	hostMode    = api.PublishMode_PUBLISH_MODE_HOST
)

func ingressNetwork(st *store.Store) (nw *api.Network) {
	st.View(func(tx store.ReadTx) { nw = tx.FindNetworkByName(api.IngressNetwork) })
	return nw
}

// TestIngressNetworkMadeWithFirstPublisher: the first service publishing
// an ingress port brings the ingress network, from the pool, in its own
// write; a host-mode port does not; a refused create leaves neither.
func TestIngressNetworkMadeWithFirstPublisher(t *testing.T) {
	s, st := newNetworkServer(t, "198.19.0.0/16")
	ctx := context.Background()

	host := imageSpec("hosted")
	host.Ports = []*api.PortConfig{published(9000, 80, "", hostMode)}
	create(t, s, host)
	if ingressNetwork(st) != nil {
		t.Fatal("a host-mode port made the ingress network")
	}

	bad := imageSpec("bad")
	bad.Ports = []*api.PortConfig{published(8080, 80, "", ingressMode)}
	bad.DependsOn = []string{"missing"}
	_, err := s.CreateService(ctx, &api.CreateServiceRequest{Spec: bad})
	wantRefused(t, "a refused publisher", err, reason.InvalidSpec, "missing")
	if ingressNetwork(st) != nil || networkCount(st) != 0 {
		t.Fatal("a refused create left the ingress network behind")
	}

	web := imageSpec("web")
	web.Ports = []*api.PortConfig{published(8080, 80, "", ingressMode)}
	create(t, s, web)
	nw := ingressNetwork(st)
	if nw == nil || !nw.Spec.Ingress || nw.Spec.Subnet != "198.19.0.0/20" {
		t.Fatalf("ingress network after the first publisher: %v; want ingress, 198.19.0.0/20 (the pool's first)", nw)
	}

	// An update that starts publishing reuses it.
	api2 := imageSpec("api")
	create(t, s, api2)
	api2 = imageSpec("api")
	api2.Ports = []*api.PortConfig{published(8081, 80, "udp", api.PublishMode_PUBLISH_MODE_INGRESS)}
	if _, err := s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "api", Spec: api2}); err != nil {
		t.Fatal(err)
	}
	if got := ingressNetwork(st); got.Id != nw.Id || networkCount(st) != 1 {
		t.Fatalf("a second publisher changed the ingress network: %v (%d networks)", got, networkCount(st))
	}
	got, err := s.GetNetwork(ctx, &api.GetNetworkRequest{Network: api.IngressNetwork})
	if err != nil || strings.Join(got.Services, ",") != "api,web" {
		t.Fatalf("inspect ingress: %v, %v; want services api and web (not hosted)", got, err)
	}
}

// TestIngressNameReserved: no network is made or named "ingress" by hand.
func TestIngressNameReserved(t *testing.T) {
	s, st := newNetworkServer(t, "")
	ctx := context.Background()
	_, err := s.CreateNetwork(ctx, &api.CreateNetworkRequest{Spec: &api.NetworkSpec{Name: api.IngressNetwork}})
	wantRefused(t, "network create ingress", err, reason.InvalidSpec, "routing mesh")
	_, err = s.CreateNetwork(ctx, &api.CreateNetworkRequest{Spec: &api.NetworkSpec{Name: "mesh", Ingress: true}})
	wantRefused(t, "a network marked ingress", err, reason.InvalidSpec, "routing mesh")

	spec := imageSpec("web")
	spec.Networks = []string{api.IngressNetwork}
	_, err = s.CreateService(ctx, &api.CreateServiceRequest{Spec: spec})
	wantRefused(t, "--network ingress", err, reason.InvalidSpec, "publishing a port")

	spec.Networks = make([]string, limits.MaxServiceNetworks)
	for i := range spec.Networks {
		spec.Networks[i] = string(rune('a'+i)) + "net"
	}
	spec.Ports = []*api.PortConfig{published(8080, 80, "", ingressMode)}
	_, err = s.CreateService(ctx, &api.CreateServiceRequest{Spec: spec})
	wantRefused(t, "full networks and an ingress port", err, reason.LimitExceeded, "ingress network")
	if networkCount(st) != 0 {
		t.Fatal("refusals left networks behind")
	}
}

// TestIngressPortsUniqueClusterWide: an ingress port is every node's, so
// no other service publishes it, in either mode; host ports may repeat.
func TestIngressPortsUniqueClusterWide(t *testing.T) {
	s, _ := newNetworkServer(t, "")
	ctx := context.Background()
	web := imageSpec("web")
	web.Ports = []*api.PortConfig{published(8080, 80, "", ingressMode)}
	create(t, s, web)
	h1 := imageSpec("h1")
	h1.Ports = []*api.PortConfig{published(9000, 80, "tcp", hostMode)}
	create(t, s, h1)
	h2 := imageSpec("h2")
	h2.Ports = []*api.PortConfig{published(9000, 80, "tcp", hostMode)}
	create(t, s, h2) // the scheduler keeps them apart

	for _, tc := range []struct {
		name string
		port *api.PortConfig
		says string
	}{
		{"ingress on ingress", published(8080, 81, "", api.PublishMode_PUBLISH_MODE_INGRESS), "service web (ingress mode)"},
		{"host on ingress", published(8080, 81, "tcp", hostMode), "service web (ingress mode)"},
		{"ingress on host", published(9000, 81, "", ingressMode), "(host mode)"},
	} {
		spec := imageSpec("other")
		spec.Ports = []*api.PortConfig{tc.port}
		_, err := s.CreateService(ctx, &api.CreateServiceRequest{Spec: spec})
		wantRefused(t, tc.name, err, reason.InvalidSpec, "port", tc.says)
	}
	// Another protocol is another port.
	udp := imageSpec("dns")
	udp.Ports = []*api.PortConfig{published(8080, 53, "udp", ingressMode)}
	create(t, s, udp)
	// A service keeps its own port across an update.
	web.Ports = []*api.PortConfig{published(8080, 8000, "", ingressMode)}
	if _, err := s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "web", Spec: web}); err != nil {
		t.Fatalf("web updating its own port: %v", err)
	}
	bad := imageSpec("bad")
	bad.Ports = []*api.PortConfig{{PublishedPort: 1, TargetPort: 1, PublishMode: 7}}
	_, err := s.CreateService(ctx, &api.CreateServiceRequest{Spec: bad})
	wantRefused(t, "an unknown mode", err, reason.InvalidSpec, "publish_mode 7")
}

// TestIngressNetworkRemoval: refused while any service, or the spec it
// would roll back to, publishes through the mesh; allowed after.
func TestIngressNetworkRemoval(t *testing.T) {
	s, st := newNetworkServer(t, "")
	ctx := context.Background()
	web := imageSpec("web")
	web.Ports = []*api.PortConfig{published(8080, 80, "", ingressMode)}
	create(t, s, web)
	_, err := s.RemoveNetwork(ctx, &api.RemoveNetworkRequest{Network: api.IngressNetwork})
	wantRefused(t, "rm ingress under a publisher", err, reason.NetworkInUse, "web")

	web = imageSpec("web")
	web.Ports = []*api.PortConfig{published(8080, 80, "", hostMode)}
	if _, err := s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "web", Spec: web}); err != nil {
		t.Fatal(err)
	}
	_, err = s.RemoveNetwork(ctx, &api.RemoveNetworkRequest{Network: api.IngressNetwork})
	wantRefused(t, "rm ingress a rollback returns to", err, reason.NetworkInUse, "web")

	if _, err := s.RemoveService(ctx, &api.RemoveServiceRequest{Service: "web"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RemoveNetwork(ctx, &api.RemoveNetworkRequest{Network: api.IngressNetwork}); err != nil {
		t.Fatalf("rm ingress with no publisher: %v", err)
	}
	// A service that stops publishing keeps the network while it could
	// roll back onto its port.
	web = imageSpec("web")
	web.Ports = []*api.PortConfig{published(8080, 80, "", ingressMode)}
	create(t, s, web)
	web = imageSpec("web")
	if _, err := s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "web", Spec: web}); err != nil {
		t.Fatal(err)
	}
	var users []string
	st.View(func(tx store.ReadTx) { users = networkUsers(tx, tx.FindNetworkByName(api.IngressNetwork), false) })
	if len(users) != 0 {
		t.Fatalf("ingress users after web stopped publishing: %v", users)
	}
	if _, err := s.RemoveNetwork(ctx, &api.RemoveNetworkRequest{Network: api.IngressNetwork}); reason.Of(err) != reason.NetworkInUse {
		t.Fatalf("rm ingress while web's previous spec publishes: %v", err)
	}
}

// TestEndpointModeAloneKeepsReplicas: vip to dnsrr changes only what the
// nodes' DNS and VIP rules show, so no update starts; moving a port from
// host to ingress changes the replicas' networks and starts one.
func TestEndpointModeAloneKeepsReplicas(t *testing.T) {
	s, _ := newNetworkServer(t, "")
	ctx := context.Background()
	spec := imageSpec("web")
	spec.Ports = []*api.PortConfig{published(8080, 80, "", hostMode)}
	create(t, s, spec)
	update := func(change func(*api.ServiceSpec)) *api.Service {
		t.Helper()
		got, err := s.GetService(ctx, &api.GetServiceRequest{Service: "web"})
		if err != nil {
			t.Fatal(err)
		}
		next := proto.CloneOf(got.Service.Spec)
		change(next)
		resp, err := s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "web", Spec: next})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Service
	}
	if svc := update(func(s *api.ServiceSpec) { s.EndpointMode = api.EndpointMode_ENDPOINT_MODE_DNSRR }); svc.SpecVersion != 1 || svc.UpdateStatus != nil {
		t.Fatalf("an endpoint mode change: spec version %d, update %v; want 1 and none", svc.SpecVersion, svc.UpdateStatus)
	}
	if svc := update(func(s *api.ServiceSpec) { s.Ports[0].PublishMode = ingressMode }); svc.SpecVersion != 2 || svc.UpdateStatus.GetState() != api.UpdateState_UPDATE_STATE_UPDATING {
		t.Fatalf("host to ingress: spec version %d, update %v; want 2, updating", svc.SpecVersion, svc.UpdateStatus)
	}
}

// TestIngressPortNotJacos: the mesh takes its ports on every node, so it
// may not take a node's jacod port (TCP) or overlay port (UDP).
func TestIngressPortNotJacos(t *testing.T) {
	s, st := newNetworkServer(t, "")
	ctx := context.Background()
	err := st.Update(ctx, func(tx *store.Tx) error {
		return tx.Create(&api.Node{Id: "n1", Hostname: "w1", Address: "198.18.0.5:7000",
			Description: &api.NodeDescription{Overlay: &api.OverlayEndpoint{PublicKey: make([]byte, 32), Port: 51820}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		port *api.PortConfig
		says string
	}{
		{"jacod's port", published(7000, 80, "", ingressMode), "its jacod"},
		{"the overlay's port", published(51820, 80, "udp", ingressMode), "its overlay link"},
	} {
		spec := imageSpec("web")
		spec.Ports = []*api.PortConfig{tc.port}
		_, err := s.CreateService(ctx, &api.CreateServiceRequest{Spec: spec})
		wantRefused(t, tc.name, err, reason.InvalidSpec, "node w1", tc.says)
	}
	if networkCount(st) != 0 {
		t.Fatal("refusals left the ingress network behind")
	}
	// The same numbers in host mode, or the other protocol, are fine.
	spec := imageSpec("web")
	spec.Ports = []*api.PortConfig{published(7000, 80, "", hostMode), published(51820, 80, "tcp", ingressMode)}
	create(t, s, spec)
}
