// Package ipam hands out overlay address space: a subnet per network
// from the cluster's pool, never overlapping another (docs/adr/0026).
// It is pure: the caller reads what is taken from the store and writes
// the choice back in the same transaction, so two leaders' choices can
// never both commit.
package ipam

import (
	"errors"
	"fmt"
	"net/netip"
)

// DefaultPool is the overlay pool of a cluster initialized without one.
var DefaultPool = netip.MustParsePrefix("10.0.0.0/8")

// Bounds of what a pool and a network subnet may be: a pool holds at
// least one network; a network holds at least four /26 node blocks.
const (
	MinPoolBits    = 8
	MaxPoolBits    = 16
	MinNetworkBits = 8
	MaxNetworkBits = 24
	// NodeBlockBits is the size of the block of a network's subnet that
	// one node gives its replicas on that network (62 addresses).
	NodeBlockBits = 26
)

// ErrExhausted is a pool with no free subnet of the size asked.
var ErrExhausted = errors.New("no free subnet left in the overlay pool")

// ParsePool reads an overlay pool: an IPv4 CIDR, /8 to /16, with no host
// bits set.
func ParsePool(s string) (netip.Prefix, error) {
	p, err := parseIPv4Prefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if p.Bits() < MinPoolBits || p.Bits() > MaxPoolBits {
		return netip.Prefix{}, fmt.Errorf("overlay pool %s: want a prefix of /%d to /%d", s, MinPoolBits, MaxPoolBits)
	}
	return p, nil
}

// ParseSubnet reads a network subnet: an IPv4 CIDR, /8 to /24, with no
// host bits set.
func ParseSubnet(s string) (netip.Prefix, error) {
	p, err := parseIPv4Prefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if p.Bits() < MinNetworkBits || p.Bits() > MaxNetworkBits {
		return netip.Prefix{}, fmt.Errorf("subnet %s: want a prefix of /%d to /%d", s, MinNetworkBits, MaxNetworkBits)
	}
	return p, nil
}

func parseIPv4Prefix(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("%q is not an IPv4 CIDR such as 10.1.0.0/16", s)
	}
	if p != p.Masked() {
		return netip.Prefix{}, fmt.Errorf("%s has host bits set: did you mean %s?", s, p.Masked())
	}
	return p, nil
}

// NetworkBits is the size of a network subnet taken from pool: /16, or
// for a pool smaller than /12 a sixteenth of it, so any pool holds at
// least 16 networks.
func NetworkBits(pool netip.Prefix) int {
	return max(16, pool.Bits()+4)
}

// Overlapping returns the first of taken that shares an address with p.
func Overlapping(p netip.Prefix, taken []netip.Prefix) (netip.Prefix, bool) {
	for _, t := range taken {
		if t.Overlaps(p) {
			return t, true
		}
	}
	return netip.Prefix{}, false
}

// Allocate returns the lowest subnet of the given size in pool that
// overlaps none of taken.
func Allocate(pool netip.Prefix, bits int, taken []netip.Prefix) (netip.Prefix, error) {
	if bits < pool.Bits() || bits > 32 {
		return netip.Prefix{}, fmt.Errorf("a /%d does not fit in the pool %s", bits, pool)
	}
	step := uint64(1) << (32 - bits)
	base := uint64(ipv4(pool.Addr()))
	end := base + uint64(1)<<(32-pool.Bits())
	for a := base; a < end; {
		p := netip.PrefixFrom(fromIPv4(uint32(a)), bits)
		t, ok := Overlapping(p, taken)
		if !ok {
			return p, nil
		}
		// Skip past what overlaps: the end of the larger of the two.
		next := uint64(ipv4(t.Masked().Addr())) + uint64(1)<<(32-t.Bits())
		a = max(a+step, (next+step-1)/step*step)
	}
	return netip.Prefix{}, fmt.Errorf("pool %s, a /%d: %w", pool, bits, ErrExhausted)
}

func ipv4(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func fromIPv4(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// VIPBlock is the last NodeBlockBits block of a network's subnet: it is
// never given to a node, and services' virtual IPs come from it.
func VIPBlock(subnet netip.Prefix) netip.Prefix {
	last := ipv4(subnet.Masked().Addr()) | (1<<(32-subnet.Bits()) - 1)
	return netip.PrefixFrom(fromIPv4(last), NodeBlockBits).Masked()
}

// AllocateBlock returns the lowest node block of subnet that overlaps
// none of taken and is not its VIP block.
func AllocateBlock(subnet netip.Prefix, taken []netip.Prefix) (netip.Prefix, error) {
	return Allocate(subnet, NodeBlockBits, append(taken[:len(taken):len(taken)], VIPBlock(subnet)))
}
