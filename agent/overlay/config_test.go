package overlay

import (
	"context"
	"encoding/hex"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

func mustPrefix(t testing.TB, s string) netip.Prefix {
	t.Helper()
	p, err := netip.ParsePrefix(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustKey(t testing.TB) PrivateKey {
	t.Helper()
	k, err := GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustAddr(t testing.TB, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func prefixes(t testing.TB, ss ...string) []netip.Prefix {
	t.Helper()
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, mustPrefix(t, s))
	}
	return out
}

// TestValidate checks the config of a node holding blocks of two networks
// (198.19.0.0/16 and 198.18.64.0/18) and every way to get it wrong.
func TestValidate(t *testing.T) {
	self, a, b := mustKey(t), mustKey(t).PublicKey(), mustKey(t).PublicKey()
	good := func() Config {
		return Config{
			PrivateKey: self,
			Addresses:  prefixes(t, "198.19.1.1/32", "198.18.64.65/32"),
			Routes: []Route{
				{Dst: mustPrefix(t, "198.19.0.0/16"), Src: mustAddr(t, "198.19.1.1")},
				{Dst: mustPrefix(t, "198.18.64.0/18"), Src: mustAddr(t, "198.18.64.65")},
			},
			Peers: []Peer{
				{PublicKey: a, Endpoint: "198.18.0.2:51820", Allowed: prefixes(t, "198.19.2.0/26", "198.18.64.128/26")},
				{PublicKey: b, Endpoint: "198.18.0.3:51820"}, // no block yet
			},
		}
	}
	if err := good().validate(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string // "": valid
	}{
		{"no blocks at all", func(c *Config) { c.Addresses, c.Routes, c.Peers[0].Allowed = nil, nil, nil }, ""},
		{"route without source", func(c *Config) { c.Routes[1].Src = netip.Addr{} }, ""},
		{"IPv6", func(c *Config) {
			c.Addresses = append(c.Addresses, mustPrefix(t, "fd00:1::1/128"))
			c.Routes = append(c.Routes, Route{Dst: mustPrefix(t, "fd00::/48"), Src: mustAddr(t, "fd00:1::1")})
			c.Peers[1].Allowed = prefixes(t, "fd00:2::/64")
		}, ""},
		{"no key", func(c *Config) { c.PrivateKey = PrivateKey{} }, "no private key"},
		{"small MTU", func(c *Config) { c.MTU = 1000 }, "MTU"},
		{"port", func(c *Config) { c.ListenPort = 70000 }, "port"},
		{"invalid address", func(c *Config) { c.Addresses[1] = netip.Prefix{} }, "not an address with a prefix length"},
		{"address twice", func(c *Config) { c.Addresses[1] = mustPrefix(t, "198.19.1.1/24") }, "address 198.19.1.1 listed twice"},
		{"route without destination", func(c *Config) { c.Routes[0].Dst = netip.Prefix{} }, "no destination"},
		{"route host bits", func(c *Config) { c.Routes[0].Dst = mustPrefix(t, "198.19.0.1/16") }, "route 198.19.0.1/16 has host bits"},
		{"route twice", func(c *Config) { c.Routes[1].Dst = c.Routes[0].Dst }, "listed twice"},
		{"foreign source", func(c *Config) { c.Routes[0].Src = mustAddr(t, "198.19.2.1") }, "not one of this node's addresses"},
		{"source of the other family", func(c *Config) {
			c.Routes = append(c.Routes, Route{Dst: mustPrefix(t, "fd00::/48"), Src: mustAddr(t, "198.19.1.1")})
		}, "other address family"},
		{"self as peer", func(c *Config) { c.Peers[0].PublicKey = self.PublicKey() }, "is this node"},
		{"twice", func(c *Config) { c.Peers[1].PublicKey = a }, "listed twice"},
		{"invalid block", func(c *Config) { c.Peers[1].Allowed = []netip.Prefix{{}} }, "not a prefix"},
		{"host bits", func(c *Config) { c.Peers[0].Allowed[0] = mustPrefix(t, "198.19.2.1/26") }, "host bits"},
		{"holds own address", func(c *Config) { c.Peers[1].Allowed = prefixes(t, "198.19.1.0/26") }, "overlaps this node's address 198.19.1.1/32"},
		{"contains own address", func(c *Config) { c.Peers[1].Allowed = prefixes(t, "198.19.0.0/20") }, "overlaps this node's address"},
		{"next to own address", func(c *Config) { c.Peers[1].Allowed = prefixes(t, "198.19.1.64/26") }, ""},
		// An address given with its block's length stands for the block.
		{"overlaps own block", func(c *Config) {
			c.Addresses[0] = mustPrefix(t, "198.19.1.1/24")
			c.Peers[1].Allowed = prefixes(t, "198.19.1.64/26")
		}, "overlaps this node's address 198.19.1.1/24"},
		{"overlaps peer", func(c *Config) { c.Peers[1].Allowed = prefixes(t, "198.19.2.32/27") }, "overlaps another peer's block 198.19.2.0/26"},
		{"overlaps itself", func(c *Config) { c.Peers[0].Allowed = prefixes(t, "198.19.2.0/26", "198.19.2.0/25") }, "overlaps its own block"},
	} {
		c := good()
		tc.change(&c)
		err := c.validate()
		if tc.want == "" && err != nil {
			t.Errorf("%s: %v, want valid", tc.name, err)
		}
		if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	c := good()
	c.Peers[0].Endpoint = "no-port"
	if _, err := resolve(context.Background(), c); err == nil {
		t.Error("endpoint without a port resolved")
	}
	for _, inside := range []string{"198.19.3.7:51820", "198.18.70.1:51820"} {
		c.Peers[0].Endpoint = inside
		if _, err := resolve(context.Background(), c); err == nil || !strings.Contains(err.Error(), "inside the overlay") {
			t.Errorf("endpoint %s inside a routed subnet: %v", inside, err)
		}
	}
	// A block no route covers is routed too, so an endpoint there loops.
	c.Routes = c.Routes[:1]
	c.Peers[0].Endpoint = "198.18.64.130:51820"
	if _, err := resolve(context.Background(), c); err == nil || !strings.Contains(err.Error(), "inside the overlay (198.18.64.128/26)") {
		t.Errorf("endpoint inside a peer's block: %v", err)
	}
	c.Peers[0].Endpoint = "localhost:51820"
	r, err := resolve(context.Background(), c)
	if err != nil {
		t.Fatalf("resolve a name: %v", err)
	}
	if !r.endpoints[0].Addr().IsLoopback() || r.ListenPort != DefaultListenPort {
		t.Errorf("resolved %v port %d", r.endpoints[0], r.ListenPort)
	}
}

// TestRoutes checks that the link routes every network's subnet from the
// node's address there, and any peer block outside them with no source.
func TestRoutes(t *testing.T) {
	k := mustKey(t)
	peer := func(ps ...string) Peer { return Peer{PublicKey: mustKey(t).PublicKey(), Allowed: prefixes(t, ps...)} }
	c := Config{PrivateKey: k, Peers: []Peer{peer("198.19.3.0/26"), peer(), peer("198.19.2.0/26", "198.18.5.0/26")}}
	want := []Route{{Dst: mustPrefix(t, "198.18.5.0/26")}, {Dst: mustPrefix(t, "198.19.2.0/26")}, {Dst: mustPrefix(t, "198.19.3.0/26")}}
	if got := c.routes(); !slices.Equal(got, want) {
		t.Errorf("routes without networks: %v, want %v", got, want)
	}
	net19 := Route{Dst: mustPrefix(t, "198.19.0.0/16"), Src: mustAddr(t, "198.19.1.1")}
	c.Addresses, c.Routes = prefixes(t, "198.19.1.1/32"), []Route{net19}
	want = []Route{{Dst: mustPrefix(t, "198.18.5.0/26")}, net19}
	if got := c.routes(); !slices.Equal(got, want) {
		t.Errorf("routes with a network: %v, want %v", got, want)
	}
	// A peer block wider than a route is not covered by it.
	narrow := Route{Dst: mustPrefix(t, "198.18.64.0/26")}
	c.Routes = append(c.Routes, narrow)
	c.Peers[1].Allowed = prefixes(t, "198.18.64.0/24")
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	want = []Route{{Dst: mustPrefix(t, "198.18.5.0/26")}, {Dst: mustPrefix(t, "198.18.64.0/24")}, narrow, net19}
	if got := c.routes(); !slices.Equal(got, want) {
		t.Errorf("routes with a block wider than a route: %v, want %v", got, want)
	}
}

// TestDiff checks that Configure touches only what changed: the key and
// port when they differ, listed peers updated in place, the rest removed.
func TestDiff(t *testing.T) {
	self := mustKey(t)
	keep, gone := mustKey(t).PublicKey(), mustKey(t).PublicKey()
	cur := &wgtypes.Device{PrivateKey: self.k, ListenPort: 51820,
		Peers: []wgtypes.Peer{{PublicKey: keep}, {PublicKey: gone}}}
	r := resolved{
		Config: Config{PrivateKey: self, ListenPort: 51820, PersistentKeepalive: 25 * time.Second,
			Peers: []Peer{{PublicKey: keep, Allowed: prefixes(t, "198.19.2.0/26", "198.18.64.0/26")}}},
		endpoints: []netip.AddrPort{netip.MustParseAddrPort("198.18.0.2:51820")},
	}
	c := diff(cur, r)
	if c.PrivateKey != nil || c.ListenPort != nil {
		t.Errorf("unchanged key or port rewritten: %v %v", c.PrivateKey != nil, c.ListenPort)
	}
	if len(c.Peers) != 2 || c.Peers[0].PublicKey != keep || c.Peers[0].Remove ||
		!c.Peers[0].ReplaceAllowedIPs || c.Peers[1].PublicKey != gone || !c.Peers[1].Remove {
		t.Fatalf("peers: %+v", c.Peers)
	}
	text := uapiSet(c)
	for _, want := range []string{"endpoint=198.18.0.2:51820\n", "allowed_ip=198.19.2.0/26\nallowed_ip=198.18.64.0/26\n",
		"persistent_keepalive_interval=25\n", "replace_allowed_ips=true\n", "remove=true\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("uapi text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "private_key") || strings.Contains(text, "listen_port") {
		t.Errorf("uapi text sets unchanged fields:\n%s", text)
	}
	r.ListenPort = 51821
	if c := diff(cur, r); c.ListenPort == nil || *c.ListenPort != 51821 {
		t.Error("changed port not written")
	}
	// A peer that holds no block keeps none: its allowed IPs are cleared.
	r.Peers[0].Allowed = nil
	text = uapiSet(diff(cur, r))
	if !strings.Contains(text, "replace_allowed_ips=true\n") || strings.Contains(text, "allowed_ip=") {
		t.Errorf("uapi text for a peer without blocks:\n%s", text)
	}
}

func TestUAPIParse(t *testing.T) {
	k := mustKey(t)
	p := mustKey(t).PublicKey()
	text := uapiSet(wgtypes.Config{PrivateKey: &k.k}) + "listen_port=51820\n" +
		"public_key=" + hexOf(p) + "\nprotocol_version=1\nendpoint=[fd00::1]:51820\n" +
		"last_handshake_time_sec=1700000000\nlast_handshake_time_nsec=5\ntx_bytes=10\nrx_bytes=20\n" +
		"persistent_keepalive_interval=0\nallowed_ip=198.19.2.0/24\nsome_future_key=1\n\n"
	d, err := uapiParse(text)
	if err != nil {
		t.Fatal(err)
	}
	if d.PublicKey != k.PublicKey() || d.ListenPort != 51820 || len(d.Peers) != 1 {
		t.Fatalf("device: %+v", d)
	}
	got := d.Peers[0]
	if got.PublicKey != p || got.Endpoint.String() != "[fd00::1]:51820" || got.TransmitBytes != 10 ||
		got.ReceiveBytes != 20 || !got.LastHandshakeTime.Equal(time.Unix(1700000000, 5)) ||
		len(got.AllowedIPs) != 1 || got.AllowedIPs[0].String() != "198.19.2.0/24" {
		t.Errorf("peer: %+v", got)
	}
	for _, bad := range []string{"nonsense\n", "tx_bytes=1\n", "public_key=zz\n", "listen_port=x\n"} {
		if _, err := uapiParse(bad); err == nil {
			t.Errorf("uapiParse(%q) accepted", bad)
		}
	}
}

func hexOf(k wgtypes.Key) string { return hex.EncodeToString(k[:]) }
