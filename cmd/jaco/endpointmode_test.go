package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
)

// TestEndpointModeFlag: create stores vip unless told dnsrr, so inspect
// shows the mode in use; update changes it only when given.
func TestEndpointModeFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		all  bool
		from api.EndpointMode
		want api.EndpointMode
	}{
		{nil, true, 0, api.EndpointMode_ENDPOINT_MODE_VIP},
		{[]string{"--endpoint-mode", "dnsrr"}, true, 0, api.EndpointMode_ENDPOINT_MODE_DNSRR},
		{nil, false, api.EndpointMode_ENDPOINT_MODE_DNSRR, api.EndpointMode_ENDPOINT_MODE_DNSRR},
		{[]string{"--endpoint-mode", "vip"}, false, api.EndpointMode_ENDPOINT_MODE_DNSRR, api.EndpointMode_ENDPOINT_MODE_VIP},
	} {
		var f specFlags
		cmd := &cobra.Command{}
		f.register(cmd.Flags())
		if err := cmd.Flags().Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		spec := &api.ServiceSpec{Name: "web", Image: "img", EndpointMode: tc.from}
		if err := f.apply(cmd, spec, tc.all); err != nil {
			t.Fatal(err)
		}
		if spec.EndpointMode != tc.want {
			t.Errorf("%v (create %v) from %v: %v, want %v", tc.args, tc.all, tc.from, spec.EndpointMode, tc.want)
		}
	}
}

// TestInspectShowsVirtualIPs: `service inspect` prints the service's
// endpoint mode and its VIPs by network.
func TestInspectShowsVirtualIPs(t *testing.T) {
	svc := &api.Service{Id: "s1", Spec: &api.ServiceSpec{Name: "web", EndpointMode: api.EndpointMode_ENDPOINT_MODE_VIP},
		VirtualIps: []*api.VirtualIP{{NetworkId: "n1", Address: "10.0.255.193"}}}
	out, err := json.Marshal(protoView(svc))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"endpoint_mode":"vip"`, `"virtual_ips":[{"network_id":"n1","address":"10.0.255.193"}]`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("inspect JSON %s lacks %s", out, want)
		}
	}
}
