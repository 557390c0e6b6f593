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

// syncInterface gives the link exactly addrs, the MTU and the routes,
// and brings it up. Each step is a no-op when already so.
func syncInterface(name string, addrs []netip.Prefix, mtu int, routes []Route) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("find link: %w", err)
	}
	if l.Attrs().MTU != mtu {
		if err := netlink.LinkSetMTU(l, mtu); err != nil {
			return fmt.Errorf("set MTU %d: %w", mtu, err)
		}
	}
	// Addresses before routes: the kernel refuses a route whose source is
	// not yet an address of the node.
	if err := syncAddrs(l, addrs); err != nil {
		return err
	}
	if l.Attrs().Flags&net.FlagUp == 0 {
		if err := netlink.LinkSetUp(l); err != nil {
			return fmt.Errorf("set up: %w", err)
		}
	}
	return syncRoutes(l, routes)
}

// syncAddrs leaves want the link's only addresses, besides the IPv6
// link-local one the kernel gives it.
func syncAddrs(l netlink.Link, want []netip.Prefix) error {
	have, err := netlink.AddrList(l, netlink.FAMILY_ALL)
	if err != nil {
		return fmt.Errorf("list addresses: %w", err)
	}
	found := make(map[netip.Prefix]bool, len(want))
	for _, a := range have {
		p, ok := prefixOf(*a.IPNet)
		if ok && slices.Contains(want, p) {
			found[p] = true
			continue
		}
		if a.Scope == unix.RT_SCOPE_LINK {
			continue // IPv6 link-local, the kernel's
		}
		if err := netlink.AddrDel(l, &a); err != nil {
			return fmt.Errorf("remove address %v: %w", a.IPNet, err)
		}
	}
	for _, p := range want {
		if found[p] {
			continue
		}
		n := ipNet(p)
		n.IP = p.Addr().AsSlice() // the host address, not the masked one
		if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: &n}); err != nil {
			return fmt.Errorf("add address %v: %w", p, err)
		}
	}
	return nil
}

// syncRoutes leaves exactly want routed through the link, each with its
// source when it has one (so this node's address in the network is the
// source and the peers' allowed IPs accept it), among the routes this
// package marks.
func syncRoutes(l netlink.Link, want []Route) error {
	have, err := netlink.RouteListFiltered(netlink.FAMILY_ALL,
		&netlink.Route{LinkIndex: l.Attrs().Index, Protocol: rtprotJaco},
		netlink.RT_FILTER_OIF|netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return fmt.Errorf("list routes: %w", err)
	}
	kept := make(map[Route]bool)
	for _, r := range have {
		if k, ok := routeOf(r); ok && slices.Contains(want, k) {
			kept[k] = true
			continue
		}
		if err := netlink.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("remove route %v: %w", r.Dst, err)
		}
	}
	for _, w := range want {
		if kept[w] {
			continue
		}
		dst := ipNet(w.Dst)
		r := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: &dst,
			Protocol: rtprotJaco, Scope: netlink.SCOPE_LINK}
		if w.Src.IsValid() {
			r.Src = w.Src.AsSlice()
		}
		if err := netlink.RouteReplace(r); err != nil {
			return fmt.Errorf("route %v from %v: %w", w.Dst, w.Src, err)
		}
	}
	return nil
}

// routeOf is a kernel route as a Route, its Src invalid when it has none.
func routeOf(r netlink.Route) (Route, bool) {
	if r.Dst == nil {
		return Route{}, false
	}
	dst, ok := prefixOf(*r.Dst)
	if !ok {
		return Route{}, false
	}
	var src netip.Addr
	if len(r.Src) > 0 {
		if src, ok = netip.AddrFromSlice(r.Src); !ok {
			return Route{}, false
		}
		src = src.Unmap()
	}
	return Route{Dst: dst, Src: src}, true
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
