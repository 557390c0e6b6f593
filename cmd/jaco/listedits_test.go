package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
)

// TestListEdits: --X-add and --X-rm change the entries they name and
// keep the others; an added key or port replaces its old entry.
func TestListEdits(t *testing.T) {
	spec := &api.ServiceSpec{
		Env:       []string{"A=1", "B=2", "C=3"},
		Networks:  []string{"front", "back"},
		Placement: &api.Placement{Constraints: []string{"node.role==worker", "node.labels.zone==a"}},
		Ports:     []*api.PortConfig{{PublishedPort: 80, TargetPort: 8080}, {PublishedPort: 53, TargetPort: 53, Protocol: "udp"}},
	}
	e := listEdits{
		envAdd: []string{"B=20", "D=4"}, envRm: []string{"C"},
		networkAdd: []string{"front", "extra"}, networkRm: []string{"back"},
		constraintAdd: []string{"node.labels.disk==ssd"}, constraintRm: []string{"node.role==worker"},
		publishAdd: []string{"80:9090", "443:8443"}, publishRm: []string{"53/udp"},
	}
	if err := e.apply(spec); err != nil {
		t.Fatal(err)
	}
	var ports []string
	for _, p := range spec.Ports {
		ports = append(ports, fmt.Sprintf("%d:%d/%s", p.PublishedPort, p.TargetPort, protocolOf(p)))
	}
	got := strings.Join([]string{
		strings.Join(spec.Env, ","), strings.Join(spec.Networks, ","),
		strings.Join(spec.Placement.Constraints, ","), strings.Join(ports, ","),
	}, " | ")
	want := "A=1,B=20,D=4 | front,extra | node.labels.zone==a,node.labels.disk==ssd | 80:9090/tcp,443:8443/tcp"
	if got != want {
		t.Fatalf("edited spec:\n got %s\nwant %s", got, want)
	}
}
