package main

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

func TestParsePublishForms(t *testing.T) {
	ingress, host := api.PublishMode_PUBLISH_MODE_INGRESS, api.PublishMode_PUBLISH_MODE_HOST
	for _, c := range []struct {
		in   string
		want *api.PortConfig
	}{
		{"8080:80", &api.PortConfig{PublishedPort: 8080, TargetPort: 80, PublishMode: ingress}},
		{"53:5353/udp", &api.PortConfig{PublishedPort: 53, TargetPort: 5353, Protocol: "udp", PublishMode: ingress}},
		{"8080:80/tcp", &api.PortConfig{PublishedPort: 8080, TargetPort: 80, Protocol: "tcp", PublishMode: ingress}},
		{"mode=host,published=8080,target=80", &api.PortConfig{PublishedPort: 8080, TargetPort: 80, PublishMode: host}},
		{"target=80,published=8080,protocol=udp,mode=host", &api.PortConfig{PublishedPort: 8080, TargetPort: 80, Protocol: "udp", PublishMode: host}},
		{"mode=ingress,published=8080,target=80", &api.PortConfig{PublishedPort: 8080, TargetPort: 80, PublishMode: ingress}},
		{"published=8080,target=80", &api.PortConfig{PublishedPort: 8080, TargetPort: 80, PublishMode: ingress}},
	} {
		got, err := parsePublish(c.in)
		if err != nil || !proto.Equal(got, c.want) {
			t.Errorf("parsePublish(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

// TestPortsShown: `service ls` tells a mesh port from a host one, and
// `service inspect` spells an unset mode out as ingress.
func TestPortsShown(t *testing.T) {
	spec := &api.ServiceSpec{Name: "web", Image: "busybox", Replicas: 2, Ports: []*api.PortConfig{
		{PublishedPort: 8080, TargetPort: 80},
		{PublishedPort: 53, TargetPort: 53, Protocol: "udp", PublishMode: api.PublishMode_PUBLISH_MODE_HOST},
		{TargetPort: 9000},
	}}
	if got, want := portsText(spec), "*:8080->80/tcp, 53->53/udp (host)"; got != want {
		t.Fatalf("portsText = %q, want %q", got, want)
	}
	var out bytes.Buffer
	views := serviceViews([]*api.Service{{Id: "s1", Spec: spec}}, nil)
	if err := serviceTable(&out, views); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.HasSuffix(lines[0], "PORTS") || !strings.HasSuffix(lines[1], "*:8080->80/tcp, 53->53/udp (host)") {
		t.Fatalf("service ls:\n%s", out.String())
	}

	svc := &api.Service{Id: "s1", Spec: spec, PreviousSpec: proto.CloneOf(spec)}
	shown := withPublishModes(svc)
	for _, s := range []*api.ServiceSpec{shown.Spec, shown.PreviousSpec} {
		if m := s.Ports[0].PublishMode; m != api.PublishMode_PUBLISH_MODE_INGRESS {
			t.Fatalf("inspect shows the default mode as %v, want ingress", m)
		}
		if m := s.Ports[2].PublishMode; m != api.PublishMode_PUBLISH_MODE_UNSPECIFIED {
			t.Fatalf("an unpublished port got mode %v", m)
		}
	}
	if spec.Ports[0].PublishMode != api.PublishMode_PUBLISH_MODE_UNSPECIFIED {
		t.Fatal("withPublishModes changed the service it was given")
	}
}

// TestPublishRmAnyMode: --publish-rm names a published port and protocol,
// and takes it out whichever mode publishes it.
func TestPublishRmAnyMode(t *testing.T) {
	spec := &api.ServiceSpec{Ports: []*api.PortConfig{
		{PublishedPort: 8080, TargetPort: 80, PublishMode: api.PublishMode_PUBLISH_MODE_HOST},
		{PublishedPort: 8081, TargetPort: 81},
		{PublishedPort: 8080, TargetPort: 80, Protocol: "udp"},
	}}
	e := listEdits{publishRm: []string{"8080", "8081/tcp"}, publishAdd: []string{"mode=host,published=9090,target=90"}}
	if err := e.apply(spec); err != nil {
		t.Fatal(err)
	}
	if got, want := portsText(spec), "*:8080->80/udp, 9090->90/tcp (host)"; got != want {
		t.Fatalf("after the edits: %q, want %q", got, want)
	}
}
