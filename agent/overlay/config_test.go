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

func TestValidate(t *testing.T) {
	self, a, b := mustKey(t), mustKey(t).PublicKey(), mustKey(t).PublicKey()
	good := func() Config {
		return Config{
			PrivateKey: self,
			Address:    mustPrefix(t, "198.19.1.1/24"),
			Pool:       mustPrefix(t, "198.19.0.0/16"),
			Peers: []Peer{
				{PublicKey: a, Endpoint: "198.18.0.2:51820", AllowedPrefix: mustPrefix(t, "198.19.2.0/24")},
				{PublicKey: b, Endpoint: "198.18.0.3:51820", AllowedPrefix: mustPrefix(t, "198.19.3.0/24")},
			},
		}
	}
	if err := good().validate(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"no key", func(c *Config) { c.PrivateKey = PrivateKey{} }, "no private key"},
		{"no address", func(c *Config) { c.Address = netip.Prefix{} }, "address"},
		{"small MTU", func(c *Config) { c.MTU = 1000 }, "MTU"},
		{"port", func(c *Config) { c.ListenPort = 70000 }, "port"},
		{"outside pool", func(c *Config) { c.Address = mustPrefix(t, "198.18.9.1/24") }, "outside the pool"},
		{"self as peer", func(c *Config) { c.Peers[0].PublicKey = self.PublicKey() }, "is this node"},
		{"twice", func(c *Config) { c.Peers[1].PublicKey = a }, "listed twice"},
		{"host bits", func(c *Config) { c.Peers[0].AllowedPrefix = mustPrefix(t, "198.19.2.1/24") }, "host bits"},
		{"overlaps own", func(c *Config) { c.Peers[0].AllowedPrefix = mustPrefix(t, "198.19.0.0/20") }, "overlaps this node"},
		{"overlaps peer", func(c *Config) { c.Peers[1].AllowedPrefix = mustPrefix(t, "198.19.2.128/25") }, "overlaps another"},
		{"no subnet", func(c *Config) { c.Peers[1].AllowedPrefix = netip.Prefix{} }, "no subnet"},
	} {
		c := good()
		c.Peers = slices.Clone(c.Peers)
		tc.change(&c)
		err := c.validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	c := good()
	c.Peers[0].Endpoint = "no-port"
	if _, err := resolve(context.Background(), c); err == nil {
		t.Error("endpoint without a port resolved")
	}
	c.Peers[0].Endpoint = "198.19.3.7:51820"
	if _, err := resolve(context.Background(), c); err == nil || !strings.Contains(err.Error(), "inside the overlay") {
		t.Errorf("endpoint inside the pool: %v", err)
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

func TestRoutes(t *testing.T) {
	k := mustKey(t)
	peer := func(p string) Peer { return Peer{PublicKey: mustKey(t).PublicKey(), AllowedPrefix: mustPrefix(t, p)} }
	c := Config{PrivateKey: k, Address: mustPrefix(t, "198.19.1.1/24"),
		Peers: []Peer{peer("198.19.3.0/24"), peer("198.19.2.0/24")}}
	if got := c.routes(); !slices.Equal(got, []netip.Prefix{mustPrefix(t, "198.19.2.0/24"), mustPrefix(t, "198.19.3.0/24")}) {
		t.Errorf("routes without a pool: %v", got)
	}
	c.Pool = mustPrefix(t, "198.19.0.0/16")
	c.Peers = append(c.Peers, peer("198.18.5.0/24"))
	if got := c.routes(); !slices.Equal(got, []netip.Prefix{mustPrefix(t, "198.18.5.0/24"), mustPrefix(t, "198.19.0.0/16")}) {
		t.Errorf("routes with a pool: %v", got)
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
			Peers: []Peer{{PublicKey: keep, AllowedPrefix: mustPrefix(t, "198.19.2.0/24")}}},
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
	for _, want := range []string{"endpoint=198.18.0.2:51820\n", "allowed_ip=198.19.2.0/24\n",
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
