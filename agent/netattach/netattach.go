// Package netattach attaches network namespaces to the node's overlay
// networks with CNI (docs/adr/0026-overlay-networks.md). The containerd
// runtime and the hook-bundle runtime both use it.
//
// Contract:
//   - One CNI network per exec.Attachment: a veth from the namespace to the
//     network's bridge on this node, an address from the node's block
//     (host-local, after the gateway) and a route to the whole subnet
//     through the gateway. The namespace's default route, if any, is not
//     touched.
//   - Interfaces are named eth<first>, eth<first+1>, … in the order of the
//     attachments, so a caller whose eth0 is its own (the containerd
//     runtime's node bridge) passes first=1.
//   - Everything Teardown needs is in the attachments themselves: callers
//     persist them beside the replica, and a restarted agent tears down
//     without the node's view of the networks.
//   - Leases and libcni's cache live under the state directory given to
//     New; a replica's lease is freed by Teardown (CNI DEL), which succeeds
//     when there is nothing left to free.
//   - Masquerading is off: a replica's address crosses to other nodes as
//     is.
package netattach

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/containernetworking/cni/libcni"
	types100 "github.com/containernetworking/cni/pkg/types/100"

	"github.com/jaco-project/jaco/agent/exec"
)

// plugins are the CNI plugins attachments run.
var plugins = []string{"bridge", "host-local", "firewall"}

// Attacher attaches namespaces to overlay networks. It holds no state of
// its own (host-local locks its lease directory), so it is safe for
// concurrent use.
type Attacher struct {
	cni     *libcni.CNIConfig
	ipamDir string
}

// New makes an Attacher keeping its leases and CNI cache under stateDir,
// running plugins found in pluginDirs. It fails, naming what is missing,
// when a plugin is in none of them.
func New(stateDir string, pluginDirs []string) (*Attacher, error) {
	if stateDir == "" {
		return nil, errors.New("netattach: state dir required")
	}
	var missing []string
	for _, p := range plugins {
		if !inDirs(p, pluginDirs) {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("netattach: CNI plugins %v not found in %v (install containernetworking-plugins)", missing, pluginDirs)
	}
	cacheDir := filepath.Join(stateDir, "cache")
	ipamDir := filepath.Join(stateDir, "ipam")
	for _, d := range []string{cacheDir, ipamDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("netattach: %w", err)
		}
	}
	return &Attacher{
		cni:     libcni.NewCNIConfigWithCacheDir(pluginDirs, cacheDir, nil),
		ipamDir: ipamDir,
	}, nil
}

func inDirs(plugin string, dirs []string) bool {
	for _, d := range dirs {
		if fi, err := os.Stat(filepath.Join(d, plugin)); err == nil && fi.Mode().IsRegular() {
			return true
		}
	}
	return false
}

// ConfList is the CNI network list (JSON) an attachment runs, for
// operators and tests to read.
func (a *Attacher) ConfList(att exec.Attachment) ([]byte, error) {
	return confList(att, a.ipamDir)
}

// IfName is the interface of the i-th attachment when numbering starts at
// first.
func IfName(first, i int) string { return fmt.Sprintf("eth%d", first+i) }

// Setup attaches the namespace at nsPath (of the container or process
// named id) to each of atts, as eth<first>…, and returns its address on
// each network in the order of atts. On failure it gives back what it
// took.
func (a *Attacher) Setup(ctx context.Context, id, nsPath string, first int, atts []exec.Attachment) ([]exec.NetworkAddress, error) {
	addrs := make([]exec.NetworkAddress, 0, len(atts))
	for i, att := range atts {
		addr, err := a.setupOne(ctx, id, nsPath, IfName(first, i), att)
		if err != nil {
			if terr := a.Teardown(context.WithoutCancel(ctx), id, nsPath, first, atts); terr != nil {
				err = errors.Join(err, terr)
			}
			return nil, err
		}
		addrs = append(addrs, exec.NetworkAddress{NetworkID: att.NetworkID, Addr: addr})
	}
	return addrs, nil
}

func (a *Attacher) setupOne(ctx context.Context, id, nsPath, ifName string, att exec.Attachment) (netip.Addr, error) {
	list, err := a.list(att)
	if err != nil {
		return netip.Addr{}, err
	}
	res, err := a.cni.AddNetworkList(ctx, list, runtimeConf(id, nsPath, ifName))
	if err != nil {
		return netip.Addr{}, fmt.Errorf("attach %s to network %q: %w", ifName, att.Network, err)
	}
	r, err := types100.NewResultFromResult(res)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("attach %s to network %q: result: %w", ifName, att.Network, err)
	}
	for _, ipc := range r.IPs {
		if a, ok := netip.AddrFromSlice(ipc.Address.IP.To4()); ok && att.Block.Contains(a) {
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("attach %s to network %q: no address of block %s in the result", ifName, att.Network, att.Block)
}

// Teardown detaches the namespace from atts (as Setup named them): the
// interfaces go and the leases are freed. Run again it succeeds; it works
// when the namespace is gone already (the lease is still freed).
func (a *Attacher) Teardown(ctx context.Context, id, nsPath string, first int, atts []exec.Attachment) error {
	var errs []error
	for i := len(atts) - 1; i >= 0; i-- {
		list, err := a.list(atts[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if nsPath != "" {
			if _, err := os.Stat(nsPath); err != nil {
				nsPath = "" // plugins then free the lease and skip the namespace
			}
		}
		if err := a.cni.DelNetworkList(ctx, list, runtimeConf(id, nsPath, IfName(first, i))); err != nil {
			errs = append(errs, fmt.Errorf("detach %s from network %q: %w", IfName(first, i), atts[i].Network, err))
		}
	}
	return errors.Join(errs...)
}

func (a *Attacher) list(att exec.Attachment) (*libcni.NetworkConfigList, error) {
	b, err := a.ConfList(att)
	if err != nil {
		return nil, err
	}
	list, err := libcni.ConfListFromBytes(b)
	if err != nil {
		return nil, fmt.Errorf("cni config of network %q: %w", att.Network, err)
	}
	return list, nil
}

func runtimeConf(id, nsPath, ifName string) *libcni.RuntimeConf {
	return &libcni.RuntimeConf{ContainerID: id, NetNS: nsPath, IfName: ifName}
}
