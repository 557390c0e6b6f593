package dispatcher

import (
	"slices"
	"time"
)

// expiry tracks when each node must next be heard from. It is pure: the
// caller supplies the time.
type expiry struct {
	deadline map[string]time.Time
}

func newExpiry() *expiry { return &expiry{deadline: map[string]time.Time{}} }

// touch sets node's deadline.
func (e *expiry) touch(node string, deadline time.Time) { e.deadline[node] = deadline }

// forget stops tracking node.
func (e *expiry) forget(node string) { delete(e.deadline, node) }

// tracked reports whether node has a deadline.
func (e *expiry) tracked(node string) bool {
	_, ok := e.deadline[node]
	return ok
}

// expired returns, sorted, the nodes whose deadline is not after now, and
// stops tracking them.
func (e *expiry) expired(now time.Time) []string {
	var out []string
	for node, d := range e.deadline {
		if !d.After(now) {
			out = append(out, node)
			delete(e.deadline, node)
		}
	}
	slices.Sort(out)
	return out
}
