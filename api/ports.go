package api

import "slices"

// IngressNetwork is the name of the routing mesh's network (ADR 0026); no
// other network may take it.
const IngressNetwork = "ingress"

// PublishedIngress tells whether p is published on every node through
// the routing mesh: a published port whose mode is not host.
func PublishedIngress(p *PortConfig) bool {
	return p.GetPublishedPort() != 0 && p.GetPublishMode() != PublishMode_PUBLISH_MODE_HOST
}

// PublishedHost tells whether p is published on its replica's node only.
func PublishedHost(p *PortConfig) bool {
	return p.GetPublishedPort() != 0 && p.GetPublishMode() == PublishMode_PUBLISH_MODE_HOST
}

// IngressPorts are the ports of spec the routing mesh publishes.
func IngressPorts(spec *ServiceSpec) []*PortConfig {
	var out []*PortConfig
	for _, p := range spec.GetPorts() {
		if PublishedIngress(p) {
			out = append(out, p)
		}
	}
	return out
}

// TaskNetworks are the networks a replica of spec attaches to, by name:
// the spec's, and the ingress network when it publishes an ingress port.
func TaskNetworks(spec *ServiceSpec) []string {
	nets := spec.GetNetworks()
	if len(IngressPorts(spec)) == 0 || slices.Contains(nets, IngressNetwork) {
		return nets
	}
	return append(slices.Clip(nets), IngressNetwork)
}
