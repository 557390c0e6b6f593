package controlapi

import (
	"maps"
	"slices"

	"github.com/jaco-project/jaco/api"
)

// findCycle returns a dependency cycle among specs as the names along it,
// first name repeated at the end ([a b a]), or nil when depends_on forms
// no cycle. Names that no spec carries are dependencies on services that
// do not exist (yet): they end a path rather than close a cycle. It is
// called with the stored specs plus the one being created or updated
// (replacing its stored version), and a cycle is refused with
// invalid_spec. The result is deterministic: services are visited in name
// order.
func findCycle(specs []*api.ServiceSpec) []string {
	deps := make(map[string][]string, len(specs))
	for _, s := range specs {
		deps[s.GetName()] = s.GetDependsOn()
	}
	names := slices.Sorted(maps.Keys(deps))

	const (
		unseen = iota
		onPath
		done
	)
	mark := make(map[string]int, len(deps))
	var path []string
	var visit func(name string) []string
	visit = func(name string) []string {
		switch mark[name] {
		case onPath:
			start := slices.Index(path, name)
			return append(slices.Clone(path[start:]), name)
		case done:
			return nil
		}
		mark[name] = onPath
		path = append(path, name)
		for _, d := range deps[name] {
			if _, known := deps[d]; !known {
				continue
			}
			if c := visit(d); c != nil {
				return c
			}
		}
		path = path[:len(path)-1]
		mark[name] = done
		return nil
	}
	for _, n := range names {
		if c := visit(n); c != nil {
			return c
		}
	}
	return nil
}
