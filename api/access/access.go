// Package access decides who may call which RPC of a node, and in which
// lifecycle state the node serves it.
//
// The policy is not written here: every rpc declares it in its .proto as
// (jaco.api.access) (api/options.proto), and protoc-gen-access generates,
// per .proto file, an init function in package api that registers it
// (api/*_access.pb.go). This package holds the table and applies it, so any
// program that links package api has the whole policy.
//
// A node's interceptor asks, in this order (docs/adr/0015-access-in-protos.md):
//
//  1. Open: the method needs no caller at all (grpc.health.v1); serve it.
//  2. Gate: the node's lifecycle state serves the method. It runs before
//     the caller is identified, so an uninitialized node answers
//     cluster_uninitialized whatever the caller presents.
//  3. Authorize: the identified caller is one the method allows.
//
// A method that declares no policy is refused by Gate and Authorize alike.
package access

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
)

// Caller is a kind of caller a policy allows (AccessPolicy.Caller).
type Caller uint8

const (
	// Anyone is every caller, anonymous ones too.
	Anyone Caller = iota + 1
	// Local is a caller on the node's unix socket.
	Local
	// Operator is a TCP caller with the operator token.
	Operator
	// Node is a node of this cluster, by its certificate, any role.
	Node
	// Manager is a node of this cluster whose certificate says manager.
	Manager
)

// State is the serving node's lifecycle state.
type State uint8

const (
	// Uninitialized: not part of a cluster yet. It is the zero State, the
	// one that serves least, so a State left unset fails closed.
	Uninitialized State = iota
	// Locked: a manager waiting for its unlock key.
	Locked
	// Worker: part of a cluster, running no manager.
	Worker
	// Managing: running its manager; every method is served.
	Managing
)

// Policy is one method's declared access rule (AccessPolicy in
// api/options.proto).
type Policy struct {
	// Allow lists the callers that may call the method.
	Allow []Caller
	// AlsoServed lists the states besides Managing that serve the method.
	AlsoServed []State
	// Refusal is the sentence a caller outside Allow gets.
	Refusal string
	// Unauthenticated refuses with codes.Unauthenticated rather than
	// codes.PermissionDenied.
	Unauthenticated bool
}

// managerRole is the role a manager's certificate carries (ca.RoleManager;
// the tests hold the two equal). Package api cannot import ca.
const managerRole = "manager"

// allows reports whether id is one of p's callers.
func (p Policy) allows(id identity.Identity) bool {
	for _, c := range p.Allow {
		switch {
		case c == Anyone,
			c == Local && id.Kind == identity.Local,
			c == Operator && id.Kind == identity.Operator,
			c == Node && id.Kind == identity.Node,
			c == Manager && id.Kind == identity.Node && id.Role == managerRole:
			return true
		}
	}
	return false
}

// policies holds every registered policy by full method name
// ("/jaco.api.ControlService/CreateService"). It is written only by init
// functions (Register), which run before anything reads it.
var policies = map[string]Policy{}

// Register adds the policies of one .proto file, keyed by full method name.
// Only the generated init functions call it. It panics on a method
// registered twice: two declarations of one rule cannot both hold.
func Register(byMethod map[string]Policy) {
	for method, p := range byMethod {
		if _, dup := policies[method]; dup {
			panic(fmt.Sprintf("access: policy of %s registered twice", method))
		}
		policies[method] = p
	}
}

// Lookup returns the policy declared for method, if any.
func Lookup(method string) (Policy, bool) {
	p, ok := policies[method]
	return p, ok
}

// healthPrefix is grpc.health.v1, not ours to annotate: supervisors probe
// it without credentials in every state.
const healthPrefix = "/grpc.health.v1.Health/"

// Open reports whether method is served to any caller in every state
// without identifying the caller. Only grpc.health.v1 is.
func Open(method string) bool {
	return strings.HasPrefix(method, healthPrefix)
}

// Gate is the lifecycle gate: nil when a node in state serves method, else
// the refusal the caller gets (cluster_uninitialized, locked,
// not_a_manager, or permission_denied for a method without a policy).
func Gate(method string, state State) error {
	if Open(method) {
		return nil
	}
	p, ok := policies[method]
	if !ok {
		return undeclared(method)
	}
	if slices.Contains(p.AlsoServed, state) {
		return nil
	}
	return NotServed(state)
}

// NotServed is what a node in state answers for a method only a managing
// node serves: cluster_uninitialized, locked or not_a_manager; nil for
// Managing. The node gives the same answer for a call that passed the gate
// while its manager was running and finds it gone.
func NotServed(state State) error {
	switch state {
	case Managing:
		return nil
	case Uninitialized:
		return reason.Error(codes.FailedPrecondition, reason.ClusterUninitialized,
			"this node is not part of a cluster yet: run 'jaco cluster init' or 'jaco node join'")
	case Locked:
		return reason.Error(codes.FailedPrecondition, reason.Locked,
			"this manager is locked: autolock is on and it restarted; run 'jaco node unlock' on it")
	default: // Worker; a State out of range fails closed too
		return reason.Error(codes.FailedPrecondition, reason.NotAManager,
			"this node is a worker; ask a manager (jaco --server MANAGER:7000)")
	}
}

// Authorize is the caller policy: nil when id may call method, else the
// method's refusal with the reason permission_denied.
func Authorize(method string, id identity.Identity) error {
	if Open(method) {
		return nil
	}
	p, ok := policies[method]
	if !ok {
		return undeclared(method)
	}
	if p.allows(id) {
		return nil
	}
	code := codes.PermissionDenied
	if p.Unauthenticated {
		code = codes.Unauthenticated
	}
	return reason.Error(code, reason.PermissionDenied, "%s", p.Refusal)
}

// undeclared refuses a method without a policy. Every rpc in api/*.proto
// declares one (the generator and a test insist), so only a service
// registered from elsewhere gets here: it is refused, not guessed at.
func undeclared(method string) error {
	return reason.Error(codes.PermissionDenied, reason.PermissionDenied, "%s declares no access policy", method)
}
