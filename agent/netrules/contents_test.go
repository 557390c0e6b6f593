package netrules

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
)

func TestNormalize(t *testing.T) {
	p := netip.MustParsePrefix
	a := netip.MustParseAddr
	for _, tc := range []struct {
		name    string
		in      State
		want    State
		wantErr string
	}{
		{name: "sorted, masked, deduplicated",
			in: State{
				Networks: []netip.Prefix{p("10.88.1.0/16"), p("10.77.0.0/16"), p("10.88.0.0/16")},
				VIPs: []VIP{
					{Addr: a("10.88.255.194"), Backends: []netip.Addr{a("10.88.0.3"), a("10.88.0.2"), a("10.88.0.3")}},
					{Addr: a("10.77.255.194")},
				},
			},
			want: State{
				Networks: []netip.Prefix{p("10.77.0.0/16"), p("10.88.0.0/16")},
				VIPs: []VIP{
					{Addr: a("10.77.255.194")},
					{Addr: a("10.88.255.194"), Backends: []netip.Addr{a("10.88.0.2"), a("10.88.0.3")}},
				},
			}},
		{name: "overlapping networks", in: State{Networks: []netip.Prefix{p("10.77.0.0/16"), p("10.77.128.0/17")}},
			wantErr: "overlap"},
		{name: "ipv6 network", in: State{Networks: []netip.Prefix{p("fd00::/64")}}, wantErr: "IPv4"},
		{name: "ipv6 vip", in: State{VIPs: []VIP{{Addr: a("fd00::1")}}}, wantErr: "IPv4"},
		{name: "zero vip", in: State{VIPs: []VIP{{}}}, wantErr: "IPv4"},
		{name: "ipv6 backend", in: State{VIPs: []VIP{{Addr: a("10.0.0.1"), Backends: []netip.Addr{a("fd00::1")}}}},
			wantErr: "IPv4"},
		{name: "vip twice", in: State{VIPs: []VIP{{Addr: a("10.0.0.1")}, {Addr: a("10.0.0.1")}}}, wantErr: "twice"},
		{name: "gateway in no network", in: State{Networks: []netip.Prefix{p("10.77.0.0/16")},
			Gateways: []netip.Addr{a("10.78.0.1")}}, wantErr: "no network"},
		{name: "two gateways on a network", in: State{Networks: []netip.Prefix{p("10.77.0.0/16")},
			Gateways: []netip.Addr{a("10.77.0.1"), a("10.77.0.65")}}, wantErr: "both on"},
		{name: "gateways sorted, deduplicated",
			in: State{Networks: []netip.Prefix{p("10.77.0.0/16"), p("10.88.0.0/16")},
				Gateways: []netip.Addr{a("10.88.0.1"), a("10.77.0.1"), a("10.88.0.1")}},
			want: State{Networks: []netip.Prefix{p("10.77.0.0/16"), p("10.88.0.0/16")},
				Gateways: []netip.Addr{a("10.77.0.1"), a("10.88.0.1")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := normalize(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("normalize = %v, want an error saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !equal(got, tc.want) {
				t.Fatalf("normalize = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// show renders elements as "key[-keyEnd][ end][ → val|verdict]", addresses
// dotted and numgen indexes as #i, for comparing with what a reader
// expects the kernel to hold.
func show(els []nftables.SetElement) []string {
	addr := func(b []byte) string {
		switch len(b) {
		case 4:
			return netip.AddrFrom4([4]byte(b)).String()
		case 8:
			return netip.AddrFrom4([4]byte(b[:4])).String() + " . " + netip.AddrFrom4([4]byte(b[4:])).String()
		}
		return fmt.Sprint(b)
	}
	var out []string
	for _, e := range els {
		s := addr(e.Key)
		if len(e.KeyEnd) > 0 {
			s += "-" + addr(e.KeyEnd)
		}
		if e.IntervalEnd {
			s += " end"
		}
		switch {
		case e.VerdictData != nil:
			s += " → goto " + e.VerdictData.Chain
		case len(e.Val) > 0:
			s += " → " + addr(e.Val)
		}
		out = append(out, s)
	}
	return out
}

func TestContentsOf(t *testing.T) {
	a := netip.MustParseAddr
	s, err := normalize(State{
		Networks: []netip.Prefix{
			netip.MustParsePrefix("10.77.0.0/16"),
			netip.MustParsePrefix("10.78.0.0/16"), // adjacent: one range in "networks"
			netip.MustParsePrefix("10.88.0.0/24"),
		},
		VIPs: []VIP{
			{Addr: a("10.77.255.194"), Backends: []netip.Addr{a("10.77.0.2"), a("10.77.0.3")}},
			{Addr: a("10.77.255.195"), Backends: []netip.Addr{a("10.77.0.3")}},
			{Addr: a("10.77.255.196")}, // no backends
			{Addr: a("10.88.0.250"), Backends: []netip.Addr{a("10.88.0.2"), a("10.88.0.3")}},
		},
		// None on 10.88.0.0/24; X's range ends where 10.78's begins.
		Gateways: []netip.Addr{a("10.77.0.1"), a("10.78.0.1")},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := contentsOf(s)
	for _, tc := range []struct {
		name      string
		got, want []string
	}{
		{"networks", show(c.networks), []string{"10.77.0.0", "10.79.0.0 end", "10.88.0.0", "10.88.1.0 end"}},
		{"same", show(c.same), []string{
			"10.77.0.0 . 10.77.0.0-10.77.255.255 . 10.77.255.255",
			"10.78.0.0 . 10.78.0.0-10.78.255.255 . 10.78.255.255",
			"10.88.0.0 . 10.88.0.0-10.88.0.255 . 10.88.0.255",
		}},
		{"vips", show(c.vips), []string{"10.77.255.194", "10.77.255.195", "10.77.255.196", "10.88.0.250"}},
		{"dispatch", show(c.dispatch), []string{
			"10.77.255.194 → goto lb-2", "10.77.255.195 → goto lb-1", "10.88.0.250 → goto lb-2"}},
		{"sources", show(c.sources), []string{
			"10.77.0.0 → 10.77.0.1", "10.78.0.0 end", "10.78.0.0 → 10.78.0.1", "10.79.0.0 end"}},
		{"hairpin", show(c.hairpin), []string{
			"10.77.0.2 . 10.77.0.2", "10.77.0.3 . 10.77.0.3", "10.88.0.2 . 10.88.0.2", "10.88.0.3 . 10.88.0.3"}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s = %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	if !slices.Equal(c.spreads, []int{1, 2}) {
		t.Errorf("spreads = %v, want [1 2]", c.spreads)
	}
	// backends: VIP . index (host byte order, as numgen writes it) → backend.
	var backends []string
	for _, e := range c.backends {
		backends = append(backends, fmt.Sprintf("%s #%d → %s", netip.AddrFrom4([4]byte(e.Key[:4])),
			binaryutil.NativeEndian.Uint32(e.Key[4:]), netip.AddrFrom4([4]byte(e.Val))))
	}
	want := []string{
		"10.77.255.194 #0 → 10.77.0.2", "10.77.255.194 #1 → 10.77.0.3",
		"10.77.255.195 #0 → 10.77.0.3",
		"10.88.0.250 #0 → 10.88.0.2", "10.88.0.250 #1 → 10.88.0.3",
	}
	if !slices.Equal(backends, want) {
		t.Errorf("backends = %q, want %q", backends, want)
	}
}

func TestContentsOfWholeSpace(t *testing.T) {
	c := contentsOf(State{Networks: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}})
	if got := show(c.networks); !slices.Equal(got, []string{"0.0.0.0"}) {
		t.Errorf("networks of 0.0.0.0/0 = %q, want one open range", got)
	}
	if got := show(c.same); !slices.Equal(got, []string{"0.0.0.0 . 0.0.0.0-255.255.255.255 . 255.255.255.255"}) {
		t.Errorf("same of 0.0.0.0/0 = %q", got)
	}
}
