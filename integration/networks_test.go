package integration

import (
	"strings"
	"testing"
)

// TestNetworkObjects: overlay networks are made, listed, inspected and
// removed from the CLI; their subnets come from the pool given at init
// and never overlap; a service names only networks that exist, and a
// network in use is not removed. Refusals change nothing.
func TestNetworkObjects(t *testing.T) {
	t.Parallel()
	m := startDaemon(t, "m")
	wantError(t, m.jaco("cluster", "init", "--overlay-pool", "198.19.0.1/16"), 2, "usage")
	wantOK(t, m.jaco("cluster", "init", "--quiet", "--overlay-pool", "198.19.0.0/16"))
	wantOK(t, m.jaco("node", "update", "--availability", "pause", "m"))

	front := strings.TrimSpace(wantOK(t, m.jaco("network", "create", "front")).stdout)
	wantOK(t, m.jaco("network", "create", "--subnet", "198.18.5.0/24", "back"))
	type net struct{ ID, Name, Subnet string }
	nets, err := decode[[]net](m.jaco("network", "ls", "--format", "json"))
	if err != nil {
		t.Fatal(err)
	}
	subnets := map[string]string{}
	for _, n := range nets {
		subnets[n.Name] = n.Subnet
	}
	if len(nets) != 2 || subnets["front"] != "198.19.0.0/20" || subnets["back"] != "198.18.5.0/24" {
		t.Fatalf("network ls: %+v; want front on the pool's first /20 and back on its own subnet", nets)
	}

	wantError(t, m.jaco("network", "create", "front"), 1, "already_exists")
	wantError(t, m.jaco("network", "create", "--subnet", "198.19.8.0/24", "inner"), 1, "invalid_spec")
	wantError(t, m.jaco("network", "create", "--subnet", "198.19.8.0/25", "small"), 2, "usage")
	const image = "jaco.local/none:latest"
	wantError(t, m.jaco("service", "create", "-d", "--name", "web", "--network", "nope", image), 1, "not_found")
	if out := wantOK(t, m.jaco("service", "ls", "-q")).stdout; out != "" {
		t.Fatalf("a refused create left services: %q", out)
	}

	wantOK(t, m.jaco("service", "create", "-d", "--name", "web", "--network", "front", "--network", "back", image))
	type inspected struct {
		ID       string `json:"id"`
		Spec     struct{ Name, Subnet string }
		Services []string `json:"services"`
	}
	got, err := decode[inspected](m.jaco("network", "inspect", "front"))
	if err != nil || got.ID != front || got.Spec.Subnet != "198.19.0.0/20" || strings.Join(got.Services, ",") != "web" {
		t.Fatalf("network inspect front: %+v, %v; want its id %s, subnet and service web", got, err, front)
	}
	wantError(t, m.jaco("network", "rm", "front"), 1, "network_in_use")

	wantOK(t, m.jaco("service", "rm", "web"))
	if out := wantOK(t, m.jaco("network", "rm", "front", "back")).stdout; out != "front\nback\n" {
		t.Fatalf("network rm printed %q", out)
	}
	if out := wantOK(t, m.jaco("network", "ls", "-q")).stdout; out != "" {
		t.Fatalf("networks left after rm: %q", out)
	}
	wantError(t, m.jaco("network", "inspect", "front"), 1, "not_found")
}
