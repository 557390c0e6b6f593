package api

import "strings"

// StackLabel names the stack a service (secret, config) belongs to
// (`jaco stack deploy`); its services are named STACK_SERVICE.
const StackLabel = "jaco.stack.namespace"

// ServiceAliases are the names other than its own that a service answers
// to on its networks: within a stack, the service's name in the compose
// file, as Swarm gives it.
func ServiceAliases(spec *ServiceSpec) []string {
	stack := spec.GetLabels()[StackLabel]
	short, ok := strings.CutPrefix(spec.GetName(), stack+"_")
	if stack == "" || !ok || short == "" {
		return nil
	}
	return []string{short}
}
