package scheduler

import (
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/placement"
	"github.com/jaco-project/jaco/manager/state/store"
)

// A hook bundle's named volume holds its replicas to the volume's node as
// a container's does (agent/exec/hooks mounts it): the affinity does not
// look at the runtime. The runtime filter still applies on that node, and
// a volume's node without hooks leaves the replicas waiting there, never
// placed on a node that runs bundles but lacks the data.
func TestVolumeAffinityForBundles(t *testing.T) {
	spec := volumeSpec("job", "job-data")
	spec.Image, spec.Bundle = "", &api.HookBundle{}
	tasks := tasksAsObjects(pendingTasks(spec, 2))
	objs := func(b1 *api.Node, vol *api.Volume) []store.Object {
		return append([]store.Object{readyNode("a1"), b1, readyNode("c1"), service(spec), vol}, tasks...)
	}
	out := decideOnce(t, testIndex(objs(readyNode("b1"), volume("job-data", "b1"))...))
	if out.perNode()["b1"] != 2 || len(out.pending) != 0 {
		t.Fatalf("placed %v; want both bundle replicas on b1, where the volume lives", out)
	}

	// Unplaced: the first replica places it, the second follows.
	writes := testScheduler().decide(testIndex(objs(readyNode("b1"), volume("job-data", ""))...))
	if len(writes) != 2 || writes[0].task.GetNodeId() == "" || writes[1].task.GetNodeId() != writes[0].task.GetNodeId() ||
		len(writes[0].volumes) != 1 || writes[0].volumes[0].GetNodeId() != writes[0].task.GetNodeId() {
		t.Fatalf("writes %v; want both on one node, the first recording the volume there", writes)
	}

	containerdOnly := readyNode("b1")
	containerdOnly.Description.Runtimes = []string{placement.RuntimeContainerd}
	out = decideOnce(t, testIndex(objs(containerdOnly, volume("job-data", "b1"))...))
	if len(out.node) != 0 || len(out.pending) != 2 {
		t.Fatalf("%v; want both pending on the volume's node, none placed elsewhere", out)
	}
	for id, msg := range out.pending {
		if !strings.HasPrefix(msg, ReasonVolumeUnavailable+": ") || !strings.Contains(msg, "volume job-data lives on node host-b1") {
			t.Errorf("%s pending %q; want volume_unavailable naming the volume's node", id, msg)
		}
	}
}
