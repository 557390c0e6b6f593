package netattach

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/agent/exec"
)

func testAttachment() exec.Attachment {
	return exec.Attachment{
		NetworkID: "n7x3k2q9m4v8b6c1d5f0g2h7j3",
		Network:   "backend",
		Subnet:    netip.MustParsePrefix("10.9.0.0/16"),
		Block:     netip.MustParsePrefix("10.9.0.64/26"),
		Gateway:   netip.MustParseAddr("10.9.0.65"),
		Bridge:    "jn0123456789ab",
		MTU:       1420,
	}
}

// The conflist is what the overlay design needs: the network's bridge as
// the gateway with no masquerading, addresses from the node's block after
// the gateway, the whole subnet routed through it, the overlay's MTU.
func TestConfList(t *testing.T) {
	att := testAttachment()
	b, err := confList(att, "/run/jaco/x/overlay/ipam")
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		CNIVersion string `json:"cniVersion"`
		Name       string `json:"name"`
		Plugins    []struct {
			Type        string `json:"type"`
			Bridge      string `json:"bridge"`
			IsGateway   bool   `json:"isGateway"`
			IPMasq      *bool  `json:"ipMasq"`
			HairpinMode bool   `json:"hairpinMode"`
			MTU         int    `json:"mtu"`
			IPAM        struct {
				Type   string `json:"type"`
				Ranges [][]struct {
					Subnet, Gateway, RangeStart string
				} `json:"ranges"`
				Routes  []struct{ Dst, GW string } `json:"routes"`
				DataDir string                     `json:"dataDir"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(b, &conf); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if conf.Name != "jaco-net-"+att.NetworkID || conf.CNIVersion != "1.0.0" {
		t.Errorf("name %q version %q", conf.Name, conf.CNIVersion)
	}
	if len(conf.Plugins) != 2 || conf.Plugins[0].Type != "bridge" || conf.Plugins[1].Type != "firewall" {
		t.Fatalf("plugins: %s", b)
	}
	br := conf.Plugins[0]
	if br.Bridge != att.Bridge || !br.IsGateway || br.IPMasq == nil || *br.IPMasq || !br.HairpinMode || br.MTU != 1420 {
		t.Errorf("bridge plugin: %s", b)
	}
	ipam := br.IPAM
	if ipam.Type != "host-local" || ipam.DataDir != "/run/jaco/x/overlay/ipam" {
		t.Errorf("ipam: %s", b)
	}
	if len(ipam.Ranges) != 1 || len(ipam.Ranges[0]) != 1 {
		t.Fatalf("ranges: %s", b)
	}
	r := ipam.Ranges[0][0]
	if r.Subnet != "10.9.0.64/26" || r.Gateway != "10.9.0.65" || r.RangeStart != "10.9.0.66" {
		t.Errorf("range %+v", r)
	}
	if len(ipam.Routes) != 1 || ipam.Routes[0].Dst != "10.9.0.0/16" || ipam.Routes[0].GW != "" {
		t.Errorf("routes %+v: want the subnet through the interface's gateway", ipam.Routes)
	}
}

// Without an MTU the plugin's default stands; an id that cannot name a
// directory is hashed.
func TestConfListDefaults(t *testing.T) {
	att := testAttachment()
	att.MTU = 0
	att.NetworkID = "../odd id"
	b, err := confList(att, "/x")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"mtu"`) {
		t.Errorf("mtu set without one: %s", b)
	}
	name := cniName(att.NetworkID)
	if !validID.MatchString(strings.TrimPrefix(name, "jaco-net-")) || name != cniName("../odd id") {
		t.Errorf("name %q of an odd id", name)
	}
	if !strings.Contains(string(b), `"name": "`+name+`"`) {
		t.Errorf("conf name: %s", b)
	}
}

func TestConfListRefusesBadAttachments(t *testing.T) {
	for name, mut := range map[string]func(*exec.Attachment){
		"no id":                   func(a *exec.Attachment) { a.NetworkID = "" },
		"no bridge":               func(a *exec.Attachment) { a.Bridge = "" },
		"long bridge":             func(a *exec.Attachment) { a.Bridge = "jn0123456789abcd" },
		"block outside subnet":    func(a *exec.Attachment) { a.Block = netip.MustParsePrefix("10.8.0.64/26") },
		"block wider than subnet": func(a *exec.Attachment) { a.Subnet = netip.MustParsePrefix("10.9.0.64/27") },
		"unmasked block":          func(a *exec.Attachment) { a.Block = netip.MustParsePrefix("10.9.0.65/26") },
		"gateway outside block":   func(a *exec.Attachment) { a.Gateway = netip.MustParseAddr("10.9.0.1") },
		"gateway is network addr": func(a *exec.Attachment) { a.Gateway = netip.MustParseAddr("10.9.0.64") },
		"no room after gateway":   func(a *exec.Attachment) { a.Gateway = netip.MustParseAddr("10.9.0.126") },
		"ipv6":                    func(a *exec.Attachment) { a.Subnet = netip.MustParsePrefix("fd00::/64") },
		"negative mtu":            func(a *exec.Attachment) { a.MTU = -1 },
	} {
		att := testAttachment()
		mut(&att)
		if _, err := confList(att, "/x"); err == nil {
			t.Errorf("%s: accepted %+v", name, att)
		}
	}
}

func TestResolvConf(t *testing.T) {
	if got := ResolvConf(nil); got != nil {
		t.Errorf("ResolvConf(nil) = %q", got)
	}
	a, b := testAttachment(), testAttachment()
	b.Gateway = netip.MustParseAddr("10.9.0.129")
	want := "nameserver 10.9.0.65\noptions ndots:0\n"
	if got := string(ResolvConf([]exec.Attachment{a, b})); got != want {
		t.Errorf("ResolvConf = %q, want %q", got, want)
	}
}
