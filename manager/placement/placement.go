// Package placement reads a service's placement against a node: its pin,
// its constraints (node.id, node.hostname, node.role, node.platform.os,
// node.platform.arch or node.labels.KEY, with == or !=) and its spread preferences. The scheduler filters and
// spreads with it, and the orchestrators and the control API ask it
// whether a service is pinned to a node or may run there, so every part
// of the leader reads a placement the same way.
package placement

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/spectemplate"
)

// ErrInvalid is wrapped by the errors of Validate, ParseConstraints and
// ParseSpread.
var ErrInvalid = errors.New("invalid placement")

// Constraint is one parsed placement constraint: attribute op value.
type Constraint struct {
	attr  Attribute
	equal bool
	value string
}

// Attribute reads one node attribute that constraints and spread
// preferences name.
type Attribute struct {
	name string // as written, e.g. "node.labels.zone"
	get  func(n *api.Node) (value string, ok bool)
}

// Value is n's value of the attribute; ok is false when n has no such
// attribute (a label it does not carry).
func (a Attribute) Value(n *api.Node) (value string, ok bool) { return a.get(n) }

func parseAttribute(s string) (Attribute, error) {
	name := strings.TrimSpace(s)
	switch name {
	case "node.id":
		return Attribute{name, func(n *api.Node) (string, bool) { return n.GetId(), true }}, nil
	case "node.hostname":
		return Attribute{name, func(n *api.Node) (string, bool) { return Hostname(n), true }}, nil
	case "node.role":
		return Attribute{name, func(n *api.Node) (string, bool) { return roleWord(n.GetRole()), true }}, nil
	case "node.platform.os":
		return Attribute{name, func(n *api.Node) (string, bool) {
			os := n.GetDescription().GetPlatform().GetOs()
			return os, os != ""
		}}, nil
	case "node.platform.arch":
		return Attribute{name, func(n *api.Node) (string, bool) {
			arch := n.GetDescription().GetPlatform().GetArchitecture()
			return arch, arch != ""
		}}, nil
	}
	if key, ok := strings.CutPrefix(name, "node.labels."); ok && key != "" {
		return Attribute{name, func(n *api.Node) (string, bool) {
			v, ok := n.GetLabels()[key]
			return v, ok
		}}, nil
	}
	return Attribute{}, fmt.Errorf("%w: unknown attribute %q (want node.id, node.hostname, node.role, node.platform.os, node.platform.arch or node.labels.KEY)", ErrInvalid, name)
}

// Hostname is the node's hostname, from the node or, when that is empty,
// from what its agent reported.
func Hostname(n *api.Node) string {
	if h := n.GetHostname(); h != "" {
		return h
	}
	return n.GetDescription().GetHostname()
}

func roleWord(r api.NodeRole) string {
	switch r {
	case api.NodeRole_NODE_ROLE_MANAGER:
		return "manager"
	case api.NodeRole_NODE_ROLE_WORKER:
		return "worker"
	}
	return ""
}

// parseConstraint parses "ATTRIBUTE==VALUE" or "ATTRIBUTE!=VALUE".
func parseConstraint(s string) (Constraint, error) {
	op, equal := "==", true
	i := strings.Index(s, "==")
	if j := strings.Index(s, "!="); j >= 0 && (i < 0 || j < i) {
		op, equal, i = "!=", false, j
	}
	if i < 0 {
		return Constraint{}, fmt.Errorf("%w: constraint %q has no == or !=", ErrInvalid, s)
	}
	attr, err := parseAttribute(s[:i])
	if err != nil {
		return Constraint{}, fmt.Errorf("constraint %q: %w", s, err)
	}
	value := strings.TrimSpace(s[i+len(op):])
	if value == "" || strings.ContainsAny(value, "=!") {
		return Constraint{}, fmt.Errorf("%w: constraint %q has no single value after %s", ErrInvalid, s, op)
	}
	if attr.name == "node.role" && value != "manager" && value != "worker" {
		return Constraint{}, fmt.Errorf("%w: constraint %q: node.role is manager or worker", ErrInvalid, s)
	}
	if attr.name == "node.platform.arch" {
		// Stacks write Go's and Docker's names alike (amd64, x86_64);
		// nodes report the kernel's.
		value = spectemplate.Architecture(value)
	}
	return Constraint{attr: attr, equal: equal, value: value}, nil
}

// ParseConstraints parses every constraint, failing on the first bad one.
func ParseConstraints(exprs []string) ([]Constraint, error) {
	out := make([]Constraint, 0, len(exprs))
	for _, e := range exprs {
		c, err := parseConstraint(e)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Matches reports whether n meets c. A node without the attribute (a
// missing label) fails == and passes !=.
func (c Constraint) Matches(n *api.Node) bool {
	v, ok := c.attr.get(n)
	if !ok {
		return !c.equal
	}
	return (v == c.value) == c.equal
}

// Available reports whether n takes new replicas: READY and ACTIVE. The
// scheduler places on such nodes only, and a global service creates its
// replicas there.
func Available(n *api.Node) bool {
	return n.GetStatus().GetState() == api.NodeStatusState_NODE_STATUS_STATE_READY &&
		n.GetAvailability() == api.NodeAvailability_NODE_AVAILABILITY_ACTIVE
}

// PinAllows reports whether a pin (a node id or hostname; "" for none)
// lets a replica run on n.
func PinAllows(pin string, n *api.Node) bool {
	return pin == "" || pin == n.GetId() || pin == Hostname(n)
}

// PinnedTo reports whether p pins its service to n: its replicas have
// nowhere else to go.
func PinnedTo(p *api.Placement, n *api.Node) bool {
	return p.GetPinNode() != "" && n != nil && PinAllows(p.GetPinNode(), n)
}

// Matcher returns a function reporting whether a node meets p's pin and
// constraints, read as the scheduler's filters read them, with p parsed
// once for checking it against many nodes. An unparsable constraint
// matches no node: the control API refuses such specs, so one here is a
// bug elsewhere and placing nothing is the safe reading.
func Matcher(p *api.Placement) func(n *api.Node) bool {
	pin := p.GetPinNode()
	cons, err := ParseConstraints(p.GetConstraints())
	if err != nil {
		return func(*api.Node) bool { return false }
	}
	return func(n *api.Node) bool {
		if !PinAllows(pin, n) {
			return false
		}
		for _, c := range cons {
			if !c.Matches(n) {
				return false
			}
		}
		return true
	}
}

// ParseSpread parses spread preferences: "node.labels.zone", optionally
// written "spread=node.labels.zone" as on the command line.
func ParseSpread(prefs []string) ([]Attribute, error) {
	out := make([]Attribute, 0, len(prefs))
	for _, p := range prefs {
		name, _ := strings.CutPrefix(strings.TrimSpace(p), "spread=")
		attr, err := parseAttribute(name)
		if err != nil {
			return nil, fmt.Errorf("spread preference %q: %w", p, err)
		}
		out = append(out, attr)
	}
	return out, nil
}

// Validate checks a service's placement, its constraints and its spread
// preferences; the control API refuses a spec it fails with invalid_spec.
// Errors wrap ErrInvalid.
func Validate(p *api.Placement) error {
	if _, err := ParseConstraints(p.GetConstraints()); err != nil {
		return err
	}
	_, err := ParseSpread(p.GetSpread())
	return err
}
