package overlay

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// kernel is the kernel's WireGuard, configured over generic netlink by
// wgctrl. Nothing runs in this process: a link left by a jacod that died
// keeps carrying traffic, and the next Open adopts it and its sessions.
// Close deletes it.
type kernel struct {
	name   string
	client *wgctrl.Client
}

// openKernel creates the wireguard link, or adopts one of that name left
// by an earlier run; a link of that name of another type is refused rather
// than deleted, since it is not ours.
func openKernel(name string) (device, error) {
	l, err := netlink.LinkByName(name)
	var nf netlink.LinkNotFoundError
	switch {
	case errors.As(err, &nf):
		if err := netlink.LinkAdd(&netlink.Wireguard{LinkAttrs: netlink.LinkAttrs{Name: name}}); err != nil {
			return nil, fmt.Errorf("overlay: add wireguard link %s: %w", name, err)
		}
	case err != nil:
		return nil, fmt.Errorf("overlay: find link %s: %w", name, err)
	case l.Type() != "wireguard":
		return nil, fmt.Errorf("overlay: link %s exists and is a %s, not wireguard", name, l.Type())
	}
	c, err := wgctrl.New()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("overlay: open wgctrl: %w", err), deleteLink(name))
	}
	return &kernel{name: name, client: c}, nil
}

func (k *kernel) apply(c wgtypes.Config) error {
	if err := k.client.ConfigureDevice(k.name, c); err != nil {
		return fmt.Errorf("wgctrl configure: %w", err)
	}
	return nil
}

func (k *kernel) state() (*wgtypes.Device, error) {
	d, err := k.client.Device(k.name)
	if err != nil {
		return nil, fmt.Errorf("wgctrl device: %w", err)
	}
	return d, nil
}

func (k *kernel) close() error {
	return errors.Join(deleteLink(k.name), k.client.Close())
}
