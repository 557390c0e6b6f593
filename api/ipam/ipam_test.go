package ipam

import (
	"errors"
	"net/netip"
	"testing"
)

func prefixes(ss ...string) []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range ss {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}

func TestAllocateSkipsWhatIsTaken(t *testing.T) {
	pool := netip.MustParsePrefix("10.0.0.0/8")
	for _, tc := range []struct {
		taken []netip.Prefix
		want  string
	}{
		{nil, "10.0.0.0/16"},
		{prefixes("10.0.0.0/16"), "10.1.0.0/16"},
		// A smaller subnet taken inside the first /16 rules it out.
		{prefixes("10.0.3.0/24"), "10.1.0.0/16"},
		// A larger one rules out every /16 it covers.
		{prefixes("10.0.0.0/12"), "10.16.0.0/16"},
		{prefixes("10.0.0.0/16", "10.2.0.0/16"), "10.1.0.0/16"},
		// Taken space outside the pool does not matter.
		{prefixes("192.168.0.0/16"), "10.0.0.0/16"},
	} {
		got, err := Allocate(pool, 16, tc.taken)
		if err != nil || got.String() != tc.want {
			t.Errorf("taken %v: %v, %v; want %s", tc.taken, got, err, tc.want)
		}
	}
}

func TestAllocateExhausted(t *testing.T) {
	pool := netip.MustParsePrefix("198.19.0.0/16")
	var taken []netip.Prefix
	for range 16 {
		p, err := Allocate(pool, NetworkBits(pool), taken)
		if err != nil {
			t.Fatalf("after %d: %v", len(taken), err)
		}
		if _, ok := Overlapping(p, taken); ok || !pool.Contains(p.Addr()) || p.Bits() != 20 {
			t.Fatalf("allocated %v: overlaps %v or is no /20 of the pool", p, taken)
		}
		taken = append(taken, p)
	}
	if _, err := Allocate(pool, 20, taken); !errors.Is(err, ErrExhausted) {
		t.Fatalf("17th /20 of a /16: %v, want ErrExhausted", err)
	}
}

func TestParse(t *testing.T) {
	for _, bad := range []string{"", "10.0.0.0", "10.0.0.1/16", "fd00::/8", "10.0.0.0/7", "10.0.0.0/17", "x"} {
		if _, err := ParsePool(bad); err == nil {
			t.Errorf("pool %q accepted", bad)
		}
	}
	for _, bad := range []string{"10.0.0.0/25", "10.0.0.0/7", "10.1.2.3/24"} {
		if _, err := ParseSubnet(bad); err == nil {
			t.Errorf("subnet %q accepted", bad)
		}
	}
	if p, err := ParsePool("198.18.0.0/15"); err != nil || p.Bits() != 15 {
		t.Errorf("198.18.0.0/15: %v, %v", p, err)
	}
	if NetworkBits(netip.MustParsePrefix("10.0.0.0/8")) != 16 || NetworkBits(netip.MustParsePrefix("198.18.0.0/15")) != 19 {
		t.Error("network sizes: want /16 from a /8 and /19 from a /15")
	}
}

func TestNodeBlocks(t *testing.T) {
	subnet := netip.MustParsePrefix("198.18.5.0/24")
	if got := VIPBlock(subnet).String(); got != "198.18.5.192/26" {
		t.Fatalf("VIP block of %s: %s, want the last /26", subnet, got)
	}
	var taken []netip.Prefix
	for _, want := range []string{"198.18.5.0/26", "198.18.5.64/26", "198.18.5.128/26"} {
		b, err := AllocateBlock(subnet, taken)
		if err != nil || b.String() != want {
			t.Fatalf("block %d: %v, %v; want %s", len(taken), b, err, want)
		}
		taken = append(taken, b)
	}
	if _, err := AllocateBlock(subnet, taken); !errors.Is(err, ErrExhausted) {
		t.Fatalf("a fourth node block of a /24: %v, want ErrExhausted (the last is the VIPs')", err)
	}
}
