package placement

import (
	"slices"

	"github.com/jaco-project/jaco/api"
)

// Runtime names as nodes report them in description.runtimes.
const (
	RuntimeContainerd = "containerd"
	RuntimeHooks      = "hooks"
)

// RuntimeOf is the runtime spec's replicas need: hooks for a bundle,
// containerd for an image, "" for neither.
func RuntimeOf(spec *api.ServiceSpec) string {
	switch {
	case spec.GetBundle() != nil:
		return RuntimeHooks
	case spec.GetImage() != "":
		return RuntimeContainerd
	}
	return ""
}

// SupportsRuntime: a node that reports no runtimes has not told us what it
// runs (an agent that predates the field, a simulated node) and is taken
// to run both; one that reports some runs only those.
func SupportsRuntime(n *api.Node, runtime string) bool {
	rts := n.GetDescription().GetRuntimes()
	return len(rts) == 0 || runtime == "" || slices.Contains(rts, runtime)
}
