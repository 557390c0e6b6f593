package api

import (
	"slices"
	"testing"
)

func TestTaskNetworksAddIngressForIngressPorts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  *ServiceSpec
		want  []string
		ports int
	}{
		{"no ports", &ServiceSpec{Networks: []string{"front"}}, []string{"front"}, 0},
		{"target only", &ServiceSpec{Ports: []*PortConfig{{TargetPort: 80}}}, nil, 0},
		{"default mode is ingress", &ServiceSpec{Networks: []string{"front"}, Ports: []*PortConfig{{TargetPort: 80, PublishedPort: 8080}}},
			[]string{"front", IngressNetwork}, 1},
		{"host mode", &ServiceSpec{Ports: []*PortConfig{{TargetPort: 80, PublishedPort: 8080, PublishMode: PublishMode_PUBLISH_MODE_HOST}}}, nil, 0},
		{"explicit ingress", &ServiceSpec{Ports: []*PortConfig{{TargetPort: 80, PublishedPort: 8080, PublishMode: PublishMode_PUBLISH_MODE_INGRESS}}},
			[]string{IngressNetwork}, 1},
	} {
		if got := TaskNetworks(tc.spec); !slices.Equal(got, tc.want) {
			t.Errorf("%s: TaskNetworks %v, want %v", tc.name, got, tc.want)
		}
		if got := len(IngressPorts(tc.spec)); got != tc.ports {
			t.Errorf("%s: %d ingress ports, want %d", tc.name, got, tc.ports)
		}
	}
	spec := &ServiceSpec{Networks: make([]string, 1, 4), Ports: []*PortConfig{{TargetPort: 80, PublishedPort: 8080}}}
	_ = TaskNetworks(spec)
	if len(spec.Networks) != 1 || cap(spec.Networks) != 4 || spec.Networks[:2][1] != "" {
		t.Error("TaskNetworks wrote into the spec's slice")
	}
}

func TestServiceAliasesOfStackServices(t *testing.T) {
	for _, tc := range []struct {
		spec *ServiceSpec
		want []string
	}{
		{&ServiceSpec{Name: "shop_web", Labels: map[string]string{StackLabel: "shop"}}, []string{"web"}},
		{&ServiceSpec{Name: "web"}, nil},
		{&ServiceSpec{Name: "other_web", Labels: map[string]string{StackLabel: "shop"}}, nil},
		{&ServiceSpec{Name: "shop_", Labels: map[string]string{StackLabel: "shop"}}, nil},
	} {
		if got := ServiceAliases(tc.spec); !slices.Equal(got, tc.want) {
			t.Errorf("%s: aliases %v, want %v", tc.spec.GetName(), got, tc.want)
		}
	}
}
