package scheduler

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/placement"
	"github.com/jaco-project/jaco/manager/state/store"
)

// TestFilters: for each filter, one node that fails it and one that
// passes; the replica must go to the passing one, and with the passing
// node gone the pending message must name the filter.
func TestFilters(t *testing.T) {
	paused := readyNode("bad")
	paused.Availability = api.NodeAvailability_NODE_AVAILABILITY_PAUSE
	drained := readyNode("bad")
	drained.Availability = api.NodeAvailability_NODE_AVAILABILITY_DRAIN
	down := readyNode("bad")
	down.Status.State = api.NodeStatusState_NODE_STATUS_STATE_DOWN
	hooksOnly := readyNode("bad")
	hooksOnly.Description.Runtimes = []string{placement.RuntimeHooks}
	small := readyNode("bad")
	small.Description.Resources.MemoryBytes = gib / 2
	fewCPU := readyNode("bad")
	fewCPU.Description.Resources.NanoCpus = 5e8
	noResources := readyNode("bad")
	noResources.Description.Resources = nil
	manager := readyNode("bad")
	manager.Role = api.NodeRole_NODE_ROLE_MANAGER
	unisolated := readyNode("bad")
	unisolated.Description.IsolationUnavailable = true
	unisolated.Description.IsolationMessage = "network isolation unavailable: operation not permitted"

	noOverlay := readyNode("bad")
	brokenOverlay := readyNode("bad")
	brokenOverlay.Description.Overlay = &api.OverlayEndpoint{Unavailable: true, Message: "no TUN device"}

	withSpec := func(f func(*api.ServiceSpec)) *api.ServiceSpec {
		s := imageSpec("svc")
		s.Reservations = &api.Resources{NanoCpus: 1e9, MemoryBytes: gib}
		f(s)
		return s
	}
	plain := withSpec(func(*api.ServiceSpec) {})
	hooks := withSpec(func(s *api.ServiceSpec) { s.Image, s.Bundle = "", &api.HookBundle{} })
	networked := withSpec(func(s *api.ServiceSpec) { s.Networks = []string{"front"} })
	for _, tc := range []struct {
		name    string
		bad     *api.Node
		spec    *api.ServiceSpec
		message string
	}{
		{"paused", paused, plain, "1 node not available for new tasks"},
		{"drained", drained, plain, "1 node not available for new tasks"},
		{"down", down, plain, "1 node not available for new tasks"},
		// A node without network isolation runs replicas of neither runtime.
		{"isolation", unisolated, plain, "1 node without network isolation"},
		{"isolation, hooks runtime", unisolated, hooks, "1 node without network isolation"},
		// Replicas on networks go only where the overlay works.
		{"overlay", noOverlay, networked, "1 node without a working overlay"},
		{"overlay unavailable", brokenOverlay, networked, "1 node without a working overlay"},
		{"runtime", hooksOnly, plain, "1 node without the containerd runtime"},
		{"memory", small, plain, "1 node with insufficient memory"},
		{"cpu", fewCPU, plain, "1 node with insufficient CPU"},
		{"no resources reported", noResources, plain, "1 node with insufficient CPU"},
		{"constraint", manager, withSpec(func(s *api.ServiceSpec) {
			s.Placement.Constraints = []string{"node.role==worker"}
		}), "1 node not satisfying the constraints"},
		{"pin", readyNode("bad"), withSpec(func(s *api.ServiceSpec) {
			s.Placement.PinNode = "host-good"
		}), `1 node not the pinned node "host-good"`},
		{"hooks runtime", readyNode("bad"), withSpec(func(s *api.ServiceSpec) {
			s.Image, s.Bundle = "", &api.HookBundle{}
			s.Placement.Constraints = []string{"node.id!=bad"}
		}), "1 node not satisfying the constraints"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good := readyNode("good")
			good.Description.Runtimes = []string{placement.RuntimeContainerd, placement.RuntimeHooks}
			good.Description.Overlay = &api.OverlayEndpoint{PublicKey: make([]byte, 32), Port: 51820, Kind: "userspace"}
			task := pendingTasks(tc.spec, 1)
			got := decideOnce(t, testIndex(tc.bad, good, task[0]))
			if got.node["svc.001"] != "good" {
				t.Fatalf("placed %v, want svc.001 on good", got)
			}
			got = decideOnce(t, testIndex(tc.bad, task[0]))
			want := "no_suitable_node: no suitable node (" + tc.message + ")"
			if got.pending["svc.001"] != want {
				t.Fatalf("without the good node: %v, want pending %q", got, want)
			}
		})
	}
}

func TestEmptyRuntimesRunBoth(t *testing.T) {
	spec := imageSpec("svc")
	spec.Image, spec.Bundle = "", &api.HookBundle{}
	got := decideOnce(t, testIndex(readyNode("n1"), pendingTasks(spec, 1)[0]))
	if got.node["svc.001"] != "n1" {
		t.Fatalf("hooks task on a node reporting no runtimes: %v", got)
	}
}

func zonedNodes(zones map[string]int) []store.Object {
	var out []store.Object
	for zone, n := range zones {
		for i := range n {
			out = append(out, readyNode(zone+string(rune('0'+i)), "zone", zone))
		}
	}
	return out
}

func perZone(o outcome) map[string]int {
	m := map[string]int{}
	for _, n := range o.node {
		m[n[:1]]++
	}
	return m
}

func TestSpreadOverZones(t *testing.T) {
	spec := imageSpec("svc")
	spec.Placement.Spread = []string{"node.labels.zone"}
	for _, tc := range []struct {
		name     string
		zones    map[string]int
		replicas int
		want     map[string]int
	}{
		{"two zones", map[string]int{"a": 2, "b": 2}, 6, map[string]int{"a": 3, "b": 3}},
		{"two zones, one node and five", map[string]int{"a": 1, "b": 5}, 6, map[string]int{"a": 3, "b": 3}},
		{"three uneven zones", map[string]int{"a": 1, "b": 2, "c": 3}, 6, map[string]int{"a": 2, "b": 2, "c": 2}},
		{"three zones, seven replicas", map[string]int{"a": 1, "b": 2, "c": 3}, 7, map[string]int{"a": 3, "b": 2, "c": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := zonedNodes(tc.zones)
			objs = append(objs, tasksAsObjects(pendingTasks(spec, tc.replicas))...)
			got := decideOnce(t, testIndex(objs...))
			if z := perZone(got); !maps.Equal(z, tc.want) {
				t.Fatalf("per zone %v, want %v (%v)", z, tc.want, got)
			}
			// Within a zone, replicas go to the least-loaded node.
			for node, n := range got.perNode() {
				zone := node[:1]
				if limit := (tc.want[zone] + tc.zones[zone] - 1) / tc.zones[zone]; n > limit {
					t.Errorf("node %s got %d replicas, more than %d", node, n, limit)
				}
			}
		})
	}
}

func TestSpreadCountsExistingReplicasAndUnlabelledNodes(t *testing.T) {
	spec := imageSpec("svc")
	spec.Placement.Spread = []string{"node.labels.zone"}
	objs := []store.Object{
		readyNode("a0", "zone", "a"), readyNode("b0", "zone", "b"), readyNode("x0"),
		runningTask("old1", spec, "a0"), runningTask("old2", spec, "a0"),
	}
	objs = append(objs, tasksAsObjects(pendingTasks(spec, 4))...)
	got := decideOnce(t, testIndex(objs...))
	// a holds 2 already; 4 more make every group (a, b, unlabelled) 2.
	if n := got.perNode(); n["a0"] != 0 || n["b0"] != 2 || n["x0"] != 2 {
		t.Fatalf("placed %v, want b0:2 x0:2", n)
	}
}

func TestSpreadHierarchical(t *testing.T) {
	spec := imageSpec("svc")
	spec.Placement.Spread = []string{"node.labels.zone", "node.labels.rack"}
	objs := []store.Object{
		readyNode("a-r1-1", "zone", "a", "rack", "r1"), readyNode("a-r1-2", "zone", "a", "rack", "r1"),
		readyNode("a-r2-1", "zone", "a", "rack", "r2"),
		readyNode("b-r3-1", "zone", "b", "rack", "r3"),
	}
	objs = append(objs, tasksAsObjects(pendingTasks(spec, 8))...)
	got := decideOnce(t, testIndex(objs...)).perNode()
	// zone a: 4 split over racks r1 (2 nodes) and r2 (1 node) 2/2; zone b: 4.
	want := map[string]int{"a-r1-1": 1, "a-r1-2": 1, "a-r2-1": 2, "b-r3-1": 4}
	if !maps.Equal(got, want) {
		t.Fatalf("placed %v, want %v", got, want)
	}
}

func TestLeastLoaded(t *testing.T) {
	other := imageSpec("other")
	spec := imageSpec("svc")
	objs := []store.Object{
		readyNode("n1"), readyNode("n2"), readyNode("n3"),
		runningTask("o1", other, "n1"), runningTask("o2", other, "n1"), runningTask("o3", other, "n2"),
	}
	objs = append(objs, tasksAsObjects(pendingTasks(spec, 4))...)
	got := decideOnce(t, testIndex(objs...))
	// One each first, emptiest node first: n3 (0 tasks), n2 (1), n1 (2).
	// Then every node has one replica of svc and the fewest tasks overall
	// decide: n3 (1) before n2 (2) and n1 (3).
	want := map[string]string{"svc.001": "n3", "svc.002": "n2", "svc.003": "n1", "svc.004": "n3"}
	if !maps.Equal(got.node, want) {
		t.Fatalf("placed %v, want %v", got, want)
	}
}

func TestPortsOnePerNode(t *testing.T) {
	host := api.PublishMode_PUBLISH_MODE_HOST
	spec := imageSpec("web")
	spec.Ports = []*api.PortConfig{{TargetPort: 80, PublishedPort: 8080, PublishMode: host}}
	udp := imageSpec("dns")
	udp.Ports = []*api.PortConfig{{Protocol: "udp", TargetPort: 53, PublishedPort: 8080, PublishMode: host}}
	objs := []store.Object{readyNode("n1"), readyNode("n2"), readyNode("n3"),
		// Another service holds 8080/tcp on n3; 8080/udp on n2 does not clash.
		runningTask("holder", spec, "n3"), runningTask("udp", udp, "n2")}
	tasks := pendingTasks(spec, 3)
	for _, task := range tasks {
		task.ServiceId = "web2"
		objs = append(objs, task)
	}
	got := decideOnce(t, testIndex(objs...))
	if n := got.perNode(); n["n1"] != 1 || n["n2"] != 1 || n["n3"] != 0 {
		t.Fatalf("placed %v, want one on n1 and n2", got)
	}
	if msg := got.pending["web.003"]; !strings.Contains(msg, "3 nodes with a published port already in use") {
		t.Fatalf("third replica: %q, want the port named", msg)
	}
}

// TestIngressPortsShareNodes: an ingress port is the mesh's on every
// node, so replicas publishing it share nodes, and, being on the ingress
// network, go only where the overlay works.
func TestIngressPortsShareNodes(t *testing.T) {
	spec := imageSpec("web")
	spec.Ports = []*api.PortConfig{{TargetPort: 80, PublishedPort: 8080}}
	meshed := readyNode("n1")
	meshed.Description.Overlay = &api.OverlayEndpoint{PublicKey: make([]byte, 32), Port: 51820, Kind: "userspace"}
	objs := []store.Object{meshed, readyNode("n2")}
	objs = append(objs, tasksAsObjects(pendingTasks(spec, 3))...)
	got := decideOnce(t, testIndex(objs...))
	if n := got.perNode(); n["n1"] != 3 {
		t.Fatalf("placed %v, want all three on n1 (n2 has no overlay)", got)
	}
}

func TestResourcesFill(t *testing.T) {
	spec := imageSpec("svc")
	spec.Reservations = &api.Resources{MemoryBytes: 1536 << 20} // 1.5 GiB: two per 4 GiB node
	objs := []store.Object{readyNode("n1"), readyNode("n2")}
	objs = append(objs, tasksAsObjects(pendingTasks(spec, 5))...)
	got := decideOnce(t, testIndex(objs...))
	if n := got.perNode(); n["n1"] != 2 || n["n2"] != 2 {
		t.Fatalf("placed %v, want two per node", got)
	}
	if msg := got.pending["svc.005"]; !strings.Contains(msg, "2 nodes with insufficient memory") {
		t.Fatalf("fifth replica: %q", msg)
	}
}

// A node runs no more containers than its container subnet has addresses,
// counting the ones already running; hook replicas take no address.
func TestContainerSlots(t *testing.T) {
	spec := imageSpec("svc")
	n1, n2 := readyNode("n1"), readyNode("n2")
	n1.Description.ContainerSlots, n2.Description.ContainerSlots = 3, 2
	hooks := &api.ServiceSpec{Name: "proc", Bundle: &api.HookBundle{}, Placement: &api.Placement{}}
	objs := []store.Object{n1, n2, runningTask("old", spec, "n1"), runningTask("proc.1", hooks, "n2")}
	objs = append(objs, tasksAsObjects(pendingTasks(spec, 5))...)
	got := decideOnce(t, testIndex(objs...))
	if n := got.perNode(); n["n1"] != 2 || n["n2"] != 2 {
		t.Fatalf("placed %v, want n1 filled to 3 containers and n2 to 2", got)
	}
	if msg := got.pending["svc.005"]; !strings.Contains(msg, "2 nodes with no container address left") {
		t.Fatalf("fifth replica: %q", msg)
	}
}

func TestPin(t *testing.T) {
	for _, pin := range []string{"n2", "host-n2"} {
		spec := imageSpec("svc")
		spec.Placement.PinNode = pin
		objs := []store.Object{readyNode("n1"), readyNode("n2"), readyNode("n3")}
		objs = append(objs, tasksAsObjects(pendingTasks(spec, 3))...)
		got := decideOnce(t, testIndex(objs...))
		if n := got.perNode(); n["n2"] != 3 {
			t.Fatalf("pin %s: placed %v, want all on n2", pin, got)
		}
	}
}

func TestPresetNode(t *testing.T) {
	spec := imageSpec("global")
	paused := readyNode("n2")
	paused.Availability = api.NodeAvailability_NODE_AVAILABILITY_PAUSE
	tasks := pendingTasks(spec, 3)
	tasks[0].NodeId, tasks[1].NodeId, tasks[2].NodeId = "n1", "n2", "gone"
	got := decideOnce(t, testIndex(readyNode("n1"), paused, tasks[0], tasks[1], tasks[2]))
	if got.node["global.001"] != "n1" || len(got.node) != 1 {
		t.Fatalf("placed %v, want only global.001 on n1", got)
	}
	want := "no_suitable_node: no suitable node (1 node not available for new tasks)"
	if got.pending["global.002"] != want || got.pending["global.003"] != want {
		t.Fatalf("pending %v, want %q for the paused and the unknown node", got.pending, want)
	}
}

func TestDependencyGating(t *testing.T) {
	db := imageSpec("db")
	web := imageSpec("web")
	web.DependsOn = []string{"db"}
	task := pendingTasks(web, 1)[0]
	ix := testIndex(readyNode("n1"), service(db), service(web), task)
	got := decideOnce(t, ix)
	want := "waiting_on_dependency: waiting for a running replica of db"
	if got.pending["web.001"] != want {
		t.Fatalf("%v, want %q", got, want)
	}
	// A db replica that is only starting does not count; a running one does.
	starting := runningTask("db.1", db, "n1")
	starting.Status.State = api.TaskState_TASK_STATE_STARTING
	ix.setTask(starting)
	if got := decideOnce(t, ix); len(got.node) != 0 {
		t.Fatalf("placed %v while db only starts", got)
	}
	running := runningTask("db.1", db, "n1")
	running.Meta.Version = 1
	ix.setTask(running)
	if !ix.recheckAll {
		t.Fatal("a dependency's first running replica did not ask for a recheck")
	}
	if got := decideOnce(t, ix); got.node["web.001"] != "n1" {
		t.Fatalf("placed %v once db runs, want web.001 on n1", got)
	}
}

func TestPendingReasonWrittenOnlyOnChange(t *testing.T) {
	spec := imageSpec("svc")
	spec.Placement.Constraints = []string{"node.labels.zone==z"}
	task := pendingTasks(spec, 1)[0]
	ix := testIndex(readyNode("n1"), task)
	if got := decideOnce(t, ix); len(got.pending) != 1 {
		t.Fatalf("first pass: %v, want one pending write", got)
	}
	ix.recheckAll = true
	if got := decideOnce(t, ix); len(got.pending) != 0 {
		t.Fatalf("second pass with nothing changed: %v, want no write", got)
	}
	// A message change alone waits for the message interval.
	ix.setNode(readyNode("n2"))
	if got := decideOnce(t, ix); len(got.pending) != 0 {
		t.Fatalf("message-only change written at once: %v", got)
	}
}

func TestPendingMessageRewrittenAfterInterval(t *testing.T) {
	spec := imageSpec("svc")
	spec.Placement.Constraints = []string{"node.labels.zone==z"}
	ix := testIndex(readyNode("n1"), pendingTasks(spec, 1)[0])
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := New(nil, WithClock(func() time.Time { return now }), WithMessageInterval(time.Minute))
	if w := s.decide(ix); len(w) != 1 {
		t.Fatalf("first pass: %d writes, want 1", len(w))
	}
	ix.setNode(readyNode("n2"))
	now = now.Add(59 * time.Second)
	if w := s.decide(ix); len(w) != 0 {
		t.Fatalf("message change within the interval: %d writes, want 0", len(w))
	}
	ix.recheckAll = true
	now = now.Add(2 * time.Second)
	w := s.decide(ix)
	if len(w) != 1 || !strings.Contains(w[0].task.GetStatus().GetMessage(), "2 nodes") {
		t.Fatalf("after the interval: %v, want one write naming 2 nodes", w)
	}
}
