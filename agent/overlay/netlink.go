package overlay

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// rtprotJaco marks the routes this package installs on the link, so a sync
// removes its own stale routes and nothing an operator added by hand.
// Values above 4 are free for routing daemons; 'J'.
const rtprotJaco = 0x4a

// syncInterface gives the link exactly addr, the MTU and the routes, and
// brings it up. Each step is a no-op when already so.
func syncInterface(name string, addr netip.Prefix, mtu int, routes []netip.Prefix) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("find link: %w", err)
	}
	if l.Attrs().MTU != mtu {
		if err := netlink.LinkSetMTU(l, mtu); err != nil {
			return fmt.Errorf("set MTU %d: %w", mtu, err)
		}
	}
	if err := syncAddr(l, addr); err != nil {
		return err
	}
	if l.Attrs().Flags&net.FlagUp == 0 {
		if err := netlink.LinkSetUp(l); err != nil {
			return fmt.Errorf("set up: %w", err)
		}
	}
	return syncRoutes(l, addr.Addr(), routes)
}

// syncAddr leaves addr the link's only address, besides the IPv6
// link-local one the kernel gives it.
func syncAddr(l netlink.Link, addr netip.Prefix) error {
	have, err := netlink.AddrList(l, netlink.FAMILY_ALL)
	if err != nil {
		return fmt.Errorf("list addresses: %w", err)
	}
	found := false
	for _, a := range have {
		p, ok := prefixOf(*a.IPNet)
		if ok && p == addr {
			found = true
			continue
		}
		if a.Scope == unix.RT_SCOPE_LINK {
			continue // IPv6 link-local, the kernel's
		}
		if err := netlink.AddrDel(l, &a); err != nil {
			return fmt.Errorf("remove address %v: %w", a.IPNet, err)
		}
	}
	if found {
		return nil
	}
	n := ipNet(addr)
	n.IP = addr.Addr().AsSlice() // the host address, not the masked one
	if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: &n}); err != nil {
		return fmt.Errorf("add address %v: %w", addr, err)
	}
	return nil
}

// syncRoutes leaves exactly want routed through the link (with src, so
// the overlay address is the source and the peer's allowed IPs accept
// it), among the routes this package marks. A prefix of the other address
// family than src is not routed.
func syncRoutes(l netlink.Link, src netip.Addr, want []netip.Prefix) error {
	have, err := netlink.RouteListFiltered(netlink.FAMILY_ALL,
		&netlink.Route{LinkIndex: l.Attrs().Index, Protocol: rtprotJaco},
		netlink.RT_FILTER_OIF|netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return fmt.Errorf("list routes: %w", err)
	}
	kept := make(map[netip.Prefix]bool)
	for _, r := range have {
		var p netip.Prefix
		ok := false
		if r.Dst != nil {
			p, ok = prefixOf(*r.Dst)
		}
		if ok && slices.Contains(want, p) && r.Src.Equal(src.AsSlice()) {
			kept[p] = true
			continue
		}
		if err := netlink.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("remove route %v: %w", r.Dst, err)
		}
	}
	for _, p := range want {
		if kept[p] || p.Addr().Is4() != src.Is4() {
			continue
		}
		dst := ipNet(p)
		r := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: &dst, Src: src.AsSlice(),
			Protocol: rtprotJaco, Scope: netlink.SCOPE_LINK}
		if err := netlink.RouteReplace(r); err != nil {
			return fmt.Errorf("route %v: %w", p, err)
		}
	}
	return nil
}

// underlayMTU is the smallest MTU among the links the peers are reached
// through, or fallbackUnderlayMTU when no route names one.
func underlayMTU(endpoints []netip.AddrPort) int {
	mtu := 0
	for _, ep := range endpoints {
		rs, err := netlink.RouteGet(ep.Addr().AsSlice())
		if err != nil || len(rs) == 0 {
			continue
		}
		l, err := netlink.LinkByIndex(rs[0].LinkIndex)
		if err != nil {
			continue
		}
		if m := l.Attrs().MTU; m > 0 && (mtu == 0 || m < mtu) {
			mtu = m
		}
	}
	if mtu == 0 {
		return fallbackUnderlayMTU
	}
	return mtu
}

var (
	kernelOnce sync.Once
	kernelOK   bool
)

// KernelAvailable reports whether the kernel can make a WireGuard link,
// by making one (the equivalent of `ip link add type wireguard`) and
// deleting it. It probes once per process.
func KernelAvailable() bool {
	kernelOnce.Do(func() {
		name := fmt.Sprintf("jacowg%d", os.Getpid()%100000)
		l := &netlink.Wireguard{LinkAttrs: netlink.LinkAttrs{Name: name}}
		if err := netlink.LinkAdd(l); err != nil {
			return
		}
		kernelOK = true
		_ = netlink.LinkDel(l)
	})
	return kernelOK
}

// deleteLink removes the named link, if there is one.
func deleteLink(name string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("find link %s: %w", name, err)
	}
	if err := netlink.LinkDel(l); err != nil {
		return fmt.Errorf("delete link %s: %w", name, err)
	}
	return nil
}
