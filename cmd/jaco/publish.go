package main

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// publishHelp is -p's help: both of Swarm's forms.
const publishHelp = "publish a port: PUBLISHED:TARGET[/udp] through the routing mesh on every node (ingress), " +
	"or mode=host|ingress,published=N,target=N[,protocol=udp] (host: on the replica's node only) (repeatable)"

// parsePublish reads one -p value, short or long form. A published port
// is ingress unless the long form says mode=host; the mode is written
// out, so the stored spec says which it is.
func parsePublish(p string) (*api.PortConfig, error) {
	if strings.Contains(p, "=") {
		return parsePublishLong(p)
	}
	ports, proto, hasProto := strings.Cut(p, "/")
	pub, target, ok := strings.Cut(ports, ":")
	if !ok {
		return nil, fmt.Errorf("want PUBLISHED:TARGET[/udp] or mode=host,published=N,target=N")
	}
	pp, err1 := portNumber(pub)
	tp, err2 := portNumber(target)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("ports are numbers from 1 to 65535")
	}
	if hasProto && proto != "tcp" && proto != "udp" {
		return nil, fmt.Errorf("protocol %q: want tcp or udp", proto)
	}
	return &api.PortConfig{Protocol: proto, PublishedPort: pp, TargetPort: tp,
		PublishMode: api.PublishMode_PUBLISH_MODE_INGRESS}, nil
}

// parsePublishLong reads mode=…,published=…,target=…,protocol=… (Swarm's
// long form); published and target are needed, each key once.
func parsePublishLong(p string) (*api.PortConfig, error) {
	pc := &api.PortConfig{PublishMode: api.PublishMode_PUBLISH_MODE_INGRESS}
	seen := map[string]bool{}
	for _, kv := range strings.Split(p, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("%q is not KEY=VALUE (keys: mode, published, target, protocol)", kv)
		}
		if seen[k] {
			return nil, fmt.Errorf("%s is given twice", k)
		}
		seen[k] = true
		var err error
		switch k {
		case "mode":
			switch v {
			case "ingress":
			case "host":
				pc.PublishMode = api.PublishMode_PUBLISH_MODE_HOST
			default:
				return nil, fmt.Errorf("mode %q: want ingress or host", v)
			}
		case "published":
			pc.PublishedPort, err = portNumber(v)
		case "target":
			pc.TargetPort, err = portNumber(v)
		case "protocol":
			if v != "tcp" && v != "udp" {
				return nil, fmt.Errorf("protocol %q: want tcp or udp", v)
			}
			pc.Protocol = v
		default:
			return nil, fmt.Errorf("unknown key %q (keys: mode, published, target, protocol)", k)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
	}
	if pc.PublishedPort == 0 || pc.TargetPort == 0 {
		return nil, fmt.Errorf("want published=N and target=N")
	}
	return pc, nil
}

func portNumber(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("ports are numbers from 1 to 65535")
	}
	return uint32(n), nil
}

// portsText is a service's published ports for `service ls`:
// "*:8080->80/tcp" through the mesh (on every node, as Docker prints it),
// "9000->90/udp (host)" on the replica's node; a target-only port is not
// published and not shown.
func portsText(spec *api.ServiceSpec) string {
	var parts []string
	for _, p := range spec.GetPorts() {
		switch {
		case api.PublishedIngress(p):
			parts = append(parts, fmt.Sprintf("*:%d->%d/%s", p.GetPublishedPort(), p.GetTargetPort(), protocolOf(p)))
		case api.PublishedHost(p):
			parts = append(parts, fmt.Sprintf("%d->%d/%s (host)", p.GetPublishedPort(), p.GetTargetPort(), protocolOf(p)))
		}
	}
	return strings.Join(parts, ", ")
}

// withPublishModes returns svc with every published port's mode spelled
// out (an unset mode is ingress), so `service inspect` says "ingress" and
// not "unspecified"; svc itself is left as it was.
func withPublishModes(svc *api.Service) *api.Service {
	out := proto.CloneOf(svc)
	for _, spec := range []*api.ServiceSpec{out.GetSpec(), out.GetPreviousSpec()} {
		for _, p := range spec.GetPorts() {
			if api.PublishedIngress(p) {
				p.PublishMode = api.PublishMode_PUBLISH_MODE_INGRESS
			}
		}
	}
	return out
}
