package containerd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
)

// resolvConfFile is the replica's resolv.conf in Replica.Dir, mounted at
// /etc/resolv.conf of a replica on overlay networks or with DNS options
// (etcfiles.go).
const resolvConfFile = "resolv.conf"

// firstOverlayIf is the index of the first overlay interface: eth0 is the
// node bridge's.
const firstOverlayIf = 1

// WithNetworks lets replicas join overlay networks: a spec naming networks
// gets an interface on each (eth1, eth2, … in the spec's order, then the
// ingress network's when it publishes a port through the routing mesh:
// api.TaskNetworks) with an address from the node's block, and the node's
// DNS server in its resolv.conf. Without it a spec naming networks or
// publishing an ingress port is refused at Prepare.
func WithNetworks(n exec.Networks) Option { return func(o *options) { o.networks = n } }

var _ exec.Networked = (*controller)(nil)

// checkNetworks refuses a spec naming networks (or publishing an ingress
// port) when the runtime has none to give (no WithNetworks).
func (c *controller) checkNetworks() error {
	if names := api.TaskNetworks(c.rep.Task.GetSpec()); len(names) > 0 && c.rt.networks == nil {
		return fmt.Errorf("replica %s: its spec attaches to networks %v but this node's runtime has no overlay networks", c.id, names)
	}
	return nil
}

// resolveNetworks records, before anything else is made for the replica,
// how it attaches to each network its spec names, waiting (bounded by ctx)
// for the node to hold a block of each. A replica resolved before
// (Prepare again) keeps what it has. Its resolv.conf follows from them
// (writeResolvConf).
func (c *controller) resolveNetworks(ctx context.Context, st *replicaState) error {
	names := api.TaskNetworks(c.rep.Task.GetSpec())
	if len(names) == 0 || len(st.Networks) == len(names) {
		return nil
	}
	atts := make([]exec.Attachment, 0, len(names))
	for _, name := range names {
		att, err := c.rt.networks.Attachment(ctx, name)
		if err != nil {
			return fmt.Errorf("replica %s: network %q: %w", c.id, name, err)
		}
		if _, err := c.rt.attacher.ConfList(att); err != nil {
			return fmt.Errorf("replica %s: %w", c.id, err)
		}
		atts = append(atts, att)
	}
	st.Networks = atts
	return saveState(c.rep.Dir, *st)
}

// setupOverlay attaches the replica's namespace to its networks once and
// records its addresses on them.
func (c *controller) setupOverlay(ctx context.Context, st *replicaState) error {
	if len(st.Networks) == 0 || len(st.NetworkAddresses) > 0 {
		return nil
	}
	addrs, err := c.rt.attacher.Setup(ctx, c.id, st.Netns, firstOverlayIf, st.Networks)
	if err != nil {
		return fmt.Errorf("replica %s: %w", c.id, err)
	}
	st.NetworkAddresses = addrs
	return saveState(c.rep.Dir, *st)
}

// teardownOverlay detaches the replica from its networks, freeing its
// leases; it needs only the recorded attachments. Nothing recorded,
// nothing to do.
func (c *controller) teardownOverlay(ctx context.Context, st replicaState) error {
	if len(st.Networks) == 0 {
		return nil
	}
	if err := c.rt.attacher.Teardown(ctx, c.id, st.Netns, firstOverlayIf, st.Networks); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(c.rep.Dir, resolvConfFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove resolv.conf: %w", err)
	}
	return nil
}

// NetworkAddresses implements exec.Networked: the replica's addresses on
// its overlay networks, none before Start (or for a spec without
// networks).
func (c *controller) NetworkAddresses(context.Context) ([]exec.NetworkAddress, error) {
	st, err := loadState(c.rep.Dir)
	if err != nil {
		return nil, err
	}
	return slices.Clone(st.NetworkAddresses), nil
}
