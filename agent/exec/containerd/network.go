package containerd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/containerd/v2/pkg/netns"
	gocni "github.com/containerd/go-cni"

	"github.com/jaco-project/jaco/api"
)

// ensureNetns returns the replica's network namespace, making it (a bind
// mount under the node's netns dir) when it has none yet.
func (c *controller) ensureNetns(st *replicaState) error {
	if st.Netns != "" {
		if _, err := os.Stat(st.Netns); err == nil {
			return nil
		}
	}
	ns, err := netns.NewNetNS(c.rt.netnsDir())
	if err != nil {
		return fmt.Errorf("create network namespace: %w", err)
	}
	st.Netns = ns.GetPath()
	if err := saveState(c.rep.Dir, *st); err != nil {
		_ = ns.Remove()
		return err
	}
	return nil
}

// removeNetns unmounts and deletes the replica's network namespace.
func removeNetns(path string) error {
	if path == "" {
		return nil
	}
	if err := netns.LoadNetNS(path).Remove(); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove network namespace %s: %w", path, err)
	}
	return nil
}

// portMappings are the spec's ports published in host mode as CNI's
// portmap wants them. Ingress ports are the routing mesh's: every node
// publishes them (agent/netrules), over the replica's ingress address.
func portMappings(spec *api.ServiceSpec) []gocni.PortMapping {
	var pm []gocni.PortMapping
	for _, p := range spec.GetPorts() {
		if !api.PublishedHost(p) {
			continue
		}
		proto := strings.ToLower(p.GetProtocol())
		if proto == "" {
			proto = "tcp"
		}
		pm = append(pm, gocni.PortMapping{
			HostPort:      int32(p.GetPublishedPort()),
			ContainerPort: int32(p.GetTargetPort()),
			Protocol:      proto,
		})
	}
	return pm
}

// setupNetwork attaches the namespace to the node's bridge and publishes
// the spec's ports; it returns the container's IPv4 address.
func (c *controller) setupNetwork(ctx context.Context, nsPath string) (string, error) {
	res, err := c.rt.cni.Setup(ctx, c.id, nsPath, gocni.WithCapabilityPortMap(portMappings(c.rep.Task.GetSpec())))
	if err != nil {
		// Give back what the plugins that ran took (lease, rules).
		_ = c.teardownNetwork(context.WithoutCancel(ctx), nsPath)
		return "", fmt.Errorf("cni setup: %w", err)
	}
	if eth, ok := res.Interfaces["eth0"]; ok {
		for _, ipc := range eth.IPConfigs {
			if ip4 := ipc.IP.To4(); ip4 != nil {
				return ip4.String(), nil
			}
		}
	}
	_ = c.teardownNetwork(context.WithoutCancel(ctx), nsPath)
	return "", errors.New("cni setup: no IPv4 address for eth0")
}

// teardownNetwork undoes setupNetwork; it succeeds when there is nothing
// left to undo (CNI DEL is idempotent).
func (c *controller) teardownNetwork(ctx context.Context, nsPath string) error {
	if err := c.rt.cni.Remove(ctx, c.id, nsPath, gocni.WithCapabilityPortMap(portMappings(c.rep.Task.GetSpec()))); err != nil {
		return fmt.Errorf("cni teardown: %w", err)
	}
	return nil
}

// checkSubnetFree fails when an interface other than the node's own bridge
// holds an address overlapping the containers' subnet: the two would
// fight over routes and replicas would be unreachable. (Another node's
// bridge in the same network namespace, or a hub address of the multi-host
// tests, are what this catches.)
func checkSubnetFree(n Names) error {
	ifs, err := net.Interfaces()
	if err != nil {
		return fmt.Errorf("list interfaces: %w", err)
	}
	for _, ifc := range ifs {
		if ifc.Name == n.Bridge {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			p, err := netip.ParsePrefix(ipn.String())
			if err != nil || !p.Addr().Is4() {
				continue
			}
			if p.Masked().Overlaps(n.Subnet) {
				return fmt.Errorf("container subnet %s overlaps %s on %s; give this node another subnet", n.Subnet, p, ifc.Name)
			}
		}
	}
	return nil
}

// cniPlugins are the plugins the node's network uses.
var cniPlugins = []string{"bridge", "host-local", "portmap", "firewall", "loopback"}

// checkPlugins fails, naming what is missing, when a plugin is in none of
// dirs (Debian: apt-get install containernetworking-plugins).
func checkPlugins(dirs []string) error {
	var missing []string
	for _, p := range cniPlugins {
		found := false
		for _, d := range dirs {
			if fi, err := os.Stat(filepath.Join(d, p)); err == nil && fi.Mode().IsRegular() {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("CNI plugins %v not found in %v (install containernetworking-plugins)", missing, dirs)
	}
	return nil
}
