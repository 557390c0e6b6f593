package containerd

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/pkg/identifiers"
)

func TestNamesFor(t *testing.T) {
	a, err := NamesFor("node-a", "")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := NamesFor("node-a", "")
	if a != again {
		t.Fatalf("names of one node differ between calls: %+v %+v", a, again)
	}
	if len(a.Bridge) > 15 {
		t.Errorf("bridge %q longer than IFNAMSIZ-1", a.Bridge)
	}
	if err := identifiers.Validate(a.Namespace); err != nil {
		t.Errorf("namespace %q: %v", a.Namespace, err)
	}
	pool := netip.MustParsePrefix("198.18.0.128/25")
	if a.Subnet.Bits() != 28 || !pool.Contains(a.Subnet.Addr()) {
		t.Errorf("derived subnet %s: want a /28 in %s", a.Subnet, pool)
	}
	own, err := NamesFor("node-a", "198.18.0.64/27")
	if err != nil || own.Subnet.String() != "198.18.0.64/27" || own.Namespace != a.Namespace {
		t.Errorf("explicit subnet: %+v, %v", own, err)
	}
	for _, bad := range []string{"nonsense", "198.18.0.1/30", "fd00::/64"} {
		if _, err := NamesFor("node-a", bad); err == nil {
			t.Errorf("subnet %q accepted", bad)
		}
	}
}

func TestCNIConfList(t *testing.T) {
	n, _ := NamesFor("node-a", "198.18.0.128/28")
	b, err := n.CNIConfList("/run/x/ipam")
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Name    string `json:"name"`
		Plugins []struct {
			Type   string `json:"type"`
			Bridge string `json:"bridge"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(b, &conf); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, p := range conf.Plugins {
		types = append(types, p.Type)
	}
	if conf.Name != n.Network || strings.Join(types, ",") != "bridge,portmap,firewall" || conf.Plugins[0].Bridge != n.Bridge {
		t.Fatalf("conflist %s", b)
	}
	if !strings.Contains(string(b), `"198.18.0.128/28"`) || !strings.Contains(string(b), `"/run/x/ipam"`) {
		t.Fatalf("conflist lacks subnet or ipam dir: %s", b)
	}
}

func TestContainerID(t *testing.T) {
	for _, id := range []string{"abc123", "x.y-z_1"} {
		if got, err := containerID(id); err != nil || got != id {
			t.Errorf("containerID(%q) = %q, %v; want it unchanged", id, got, err)
		}
	}
	got, err := containerID("not valid/id")
	if err != nil || identifiers.Validate(got) != nil {
		t.Errorf("containerID of an invalid id = %q, %v", got, err)
	}
	if again, _ := containerID("not valid/id"); again != got {
		t.Errorf("containerID not stable: %q %q", got, again)
	}
	if _, err := containerID(""); err == nil {
		t.Error("empty task id accepted")
	}
}

func TestExitOf(t *testing.T) {
	at := time.Unix(1, 0)
	cases := []struct {
		code   uint32
		signal string
	}{{0, ""}, {1, ""}, {128, ""}, {137, "SIGKILL"}, {130, "SIGINT"}, {143, "SIGTERM"}, {255, ""}}
	for _, tc := range cases {
		if e := exitOf(tc.code, at); e.Code != int(tc.code) || e.Signal != tc.signal || !e.At.Equal(at) {
			t.Errorf("exitOf(%d) = %+v, want signal %q", tc.code, e, tc.signal)
		}
	}
}

func TestCheckPlugins(t *testing.T) {
	err := checkPlugins([]string{t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "containernetworking-plugins") {
		t.Fatalf("checkPlugins on an empty dir = %v", err)
	}
}

// Every container takes one address; the network address, the bridge and
// the broadcast address are not handed out.
func TestSlots(t *testing.T) {
	for subnet, want := range map[string]int{"": 13, "10.9.0.0/24": 253, "10.9.0.0/29": 5} {
		n, err := NamesFor("node-a", subnet)
		if err != nil {
			t.Fatal(err)
		}
		if got := n.Slots(); got != want {
			t.Errorf("subnet %q: %d slots, want %d", subnet, got, want)
		}
	}
}
