package netrules

import (
	"net/netip"
	"strings"
	"testing"
)

func TestNormalizeIngress(t *testing.T) {
	p := netip.MustParsePrefix
	a := netip.MustParseAddr
	nets := []netip.Prefix{p("10.77.0.0/16"), p("10.88.0.0/16")}
	for _, tc := range []struct {
		name    string
		in      Ingress
		want    *Ingress
		wantErr string
	}{
		{name: "sorted, defaults, deduplicated",
			in: Ingress{Subnet: p("10.77.1.0/16"), Gateway: a("10.77.0.1"), Ports: []Published{
				{Proto: "udp", Port: 53, Target: 5353},
				{Port: 80, Target: 8080, Backends: []netip.Addr{a("10.77.0.3"), a("10.77.0.2"), a("10.77.0.3")}},
				{Proto: "TCP", Port: 22, Target: 2222},
			}},
			want: &Ingress{Subnet: p("10.77.0.0/16"), Gateway: a("10.77.0.1"), Ports: []Published{
				{Proto: "tcp", Port: 22, Target: 2222},
				{Proto: "tcp", Port: 80, Target: 8080, Backends: []netip.Addr{a("10.77.0.2"), a("10.77.0.3")}},
				{Proto: "udp", Port: 53, Target: 5353},
			}}},
		{name: "no gateway yet", in: Ingress{Subnet: p("10.77.0.0/16"), Ports: []Published{{Port: 80, Target: 80}}},
			want: &Ingress{Subnet: p("10.77.0.0/16"), Ports: []Published{{Proto: "tcp", Port: 80, Target: 80}}}},
		{name: "subnet not a network", in: Ingress{Subnet: p("10.99.0.0/16")}, wantErr: "not one of the networks"},
		{name: "subnet inside a network", in: Ingress{Subnet: p("10.77.0.0/24")}, wantErr: "not one of the networks"},
		{name: "no subnet", in: Ingress{}, wantErr: "IPv4"},
		{name: "gateway outside", in: Ingress{Subnet: p("10.77.0.0/16"), Gateway: a("10.88.0.1")}, wantErr: "not in"},
		{name: "backend outside", in: Ingress{Subnet: p("10.77.0.0/16"), Ports: []Published{
			{Port: 80, Target: 80, Backends: []netip.Addr{a("10.88.0.2")}}}}, wantErr: "not in"},
		{name: "sctp", in: Ingress{Subnet: p("10.77.0.0/16"), Ports: []Published{{Proto: "sctp", Port: 80, Target: 80}}},
			wantErr: "protocol"},
		{name: "port 0", in: Ingress{Subnet: p("10.77.0.0/16"), Ports: []Published{{Port: 80}}}, wantErr: "0"},
		{name: "port twice", in: Ingress{Subnet: p("10.77.0.0/16"), Ports: []Published{
			{Port: 80, Target: 80}, {Proto: "tcp", Port: 80, Target: 81}}}, wantErr: "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := normalize(State{Networks: nets, Ingress: &tc.in})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("normalize = %v, want an error saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !equalIngress(got.Ingress, tc.want) {
				t.Fatalf("normalize = %+v, %v; want %+v", got.Ingress, err, tc.want)
			}
		})
	}
}

func TestIngressContents(t *testing.T) {
	p := netip.MustParsePrefix
	a := netip.MustParseAddr
	in := &Ingress{Subnet: p("10.77.0.0/16"), Gateway: a("10.77.0.1"), Ports: []Published{
		{Proto: "tcp", Port: 80, Target: 8080, Backends: []netip.Addr{a("10.77.0.2"), a("10.77.0.66")}},
		{Proto: "udp", Port: 53, Target: 5353, Backends: []netip.Addr{a("10.77.0.2")}},
		{Proto: "tcp", Port: 81, Target: 8080},
	}}
	c := ingressContentsOf(in)
	if len(c.idle) != 1 || len(c.dispatch) != 2 || len(c.backends) != 3 {
		t.Fatalf("idle %d, dispatch %d, backends %d: want 1, 2, 3", len(c.idle), len(c.dispatch), len(c.backends))
	}
	// tcp . 81, each part padded to a register.
	if got, want := c.idle[0].Key, []byte{6, 0, 0, 0, 0, 81, 0, 0}; string(got) != string(want) {
		t.Errorf("idle key %v, want %v", got, want)
	}
	// The backend and its target port, padded likewise.
	if got, want := c.backends[1].Val, []byte{10, 77, 0, 66, 0x1f, 0x90, 0, 0}; string(got) != string(want) {
		t.Errorf("backend value %v, want %v", got, want)
	}
	if len(c.spreads) != 2 || c.dispatch[0].VerdictData.Chain != "ilb-2" {
		t.Errorf("spreads %v, first verdict %+v", c.spreads, c.dispatch[0].VerdictData)
	}
	// Without a gateway the node cannot take the answers: all refuse.
	in.Gateway = netip.Addr{}
	if c := ingressContentsOf(in); len(c.idle) != 3 || len(c.dispatch) != 0 || len(c.backends) != 0 {
		t.Errorf("without a gateway: idle %d, dispatch %d, backends %d; want 3, 0, 0", len(c.idle), len(c.dispatch), len(c.backends))
	}
}
