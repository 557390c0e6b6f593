package access_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "github.com/jaco-project/jaco/api" // registers every policy
	"github.com/jaco-project/jaco/api/access"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
)

// The callers a node tells apart. The roles are ca's, as a node
// certificate carries them.
var (
	local     = identity.Identity{Kind: identity.Local}
	operator  = identity.Identity{Kind: identity.Operator}
	anonymous = identity.Identity{Kind: identity.Anonymous}
	worker    = identity.Identity{Kind: identity.Node, NodeID: "w1", Role: ca.RoleWorker}
	manager   = identity.Identity{Kind: identity.Node, NodeID: "m1", Role: ca.RoleManager}
	callers   = map[string]identity.Identity{
		"local": local, "operator": operator, "anonymous": anonymous, "worker node": worker, "manager node": manager,
	}
)

var states = map[string]access.State{
	"uninitialized": access.Uninitialized, "locked": access.Locked, "worker": access.Worker, "managing": access.Managing,
}

// apiMethods returns the full name of every rpc of package jaco.api, as
// the descriptors linked from package api hold them.
func apiMethods(t *testing.T) []string {
	t.Helper()
	var methods []string
	protoregistry.GlobalFiles.RangeFilesByPackage("jaco.api", func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			s := f.Services().Get(i)
			for j := range s.Methods().Len() {
				methods = append(methods, "/"+string(s.FullName())+"/"+string(s.Methods().Get(j).Name()))
			}
		}
		return true
	})
	if len(methods) == 0 {
		t.Fatal("no rpc in package jaco.api: are its files linked?")
	}
	slices.Sort(methods)
	return methods
}

// Today's lifecycle gate (node/auth.go before the policy moved into the
// protos): the states besides managing that serve a method. Every method
// not listed is served by a managing node only.
var servedBeyondManaging = map[string][]access.State{
	"/jaco.api.ClusterService/Init":            {access.Uninitialized, access.Worker},
	"/jaco.api.ClusterService/Join":            {access.Uninitialized, access.Worker},
	"/jaco.api.ClusterService/Status":          {access.Uninitialized, access.Locked, access.Worker},
	"/jaco.api.NodeService/Unlock":             {access.Locked, access.Worker},
	"/jaco.api.AgentService/Logs":              {access.Worker},
	"/jaco.api.AgentService/LoadImage":         {access.Worker},
	"/jaco.api.AgentService/ListLocalReplicas": {access.Worker},
	"/jaco.api.AgentService/OverlayStatus":     {access.Worker},
	"/jaco.api.AgentService/ReadVolume":        {access.Worker},
	"/jaco.api.MonitorService/Heartbeat":       {access.Locked, access.Worker},
	"/jaco.api.MonitorService/LastHeard":       {access.Locked, access.Worker},
}

// refusal is what a refused call gets: code, reason word, sentence.
type refusal struct {
	code     codes.Code
	word     string
	sentence string
}

func refusalOf(err error) refusal {
	return refusal{code: status.Code(err), word: reason.Of(err), sentence: reason.Sentence(err)}
}

var gateRefusals = map[access.State]refusal{
	access.Uninitialized: {codes.FailedPrecondition, reason.ClusterUninitialized,
		"this node is not part of a cluster yet: run 'jaco cluster init' or 'jaco node join'"},
	access.Locked: {codes.FailedPrecondition, reason.Locked,
		"this manager is locked: autolock is on and it restarted; run 'jaco node unlock' on it"},
	access.Worker: {codes.FailedPrecondition, reason.NotAManager,
		"this node is a worker; ask a manager (jaco --server MANAGER:7000)"},
}

func TestGateServesEachMethodInTodaysStates(t *testing.T) {
	for _, method := range apiMethods(t) {
		for stateName, state := range states {
			err := access.Gate(method, state)
			served := state == access.Managing || slices.Contains(servedBeyondManaging[method], state)
			if served {
				if err != nil {
					t.Errorf("%s, %s: refused (%v), want served", method, stateName, err)
				}
				continue
			}
			if got, want := refusalOf(err), gateRefusals[state]; got != want {
				t.Errorf("%s, %s: got %+v, want %+v", method, stateName, got, want)
			}
		}
	}
}

func TestNotServedIsTheGatesRefusal(t *testing.T) {
	for state, want := range gateRefusals {
		if got := refusalOf(access.NotServed(state)); got != want {
			t.Errorf("state %d: got %+v, want %+v", state, got, want)
		}
	}
	if err := access.NotServed(access.Managing); err != nil {
		t.Errorf("a managing node refuses with %v, want nothing", err)
	}
	if err := access.Gate("/jaco.api.ControlService/CreateService", access.State(99)); err == nil {
		t.Error("a State out of range serves a manager's method")
	}
}

// A caller rule of today's node/auth.go: who may call, and what the rest
// are told.
type rule struct {
	allowed []identity.Identity
	refused refusal
}

func deny(sentence string) refusal {
	return refusal{codes.PermissionDenied, reason.PermissionDenied, sentence}
}

var (
	anyone    = rule{allowed: slices.Collect(maps.Values(callers))}
	operators = rule{[]identity.Identity{local, operator},
		refusal{codes.Unauthenticated, reason.PermissionDenied, "this call needs the operator token (JACO_TOKEN) or the local socket"}}
	replicaLogs = rule{[]identity.Identity{local, operator, manager}, deny("replica logs are for managers and operators")}
	dispatcher  = rule{[]identity.Identity{worker, manager}, deny("the dispatcher serves the agents of this cluster's nodes only")}
	raft        = rule{[]identity.Identity{manager}, deny("raft traffic is accepted only from managers of this cluster")}
)

// todaysRules holds today's caller policy, by full method name or, ending
// in "/", by service.
var todaysRules = map[string]rule{
	"/jaco.api.ClusterService/Init":   {[]identity.Identity{local}, deny("cluster init is accepted only on the local socket")},
	"/jaco.api.ClusterService/Join":   anyone,
	"/jaco.api.ClusterService/Status": anyone,
	"/jaco.api.NodeService/Unlock": {[]identity.Identity{local},
		deny("a node is unlocked through its local socket only: the key must not travel to a server that cannot prove who it is")},
	"/jaco.api.NodeService/DashboardLogin": {[]identity.Identity{local},
		deny("a dashboard login link is given through the local socket only: it signs in as the operator")},
	"/jaco.api.ControlService/":                operators,
	"/jaco.api.BackupService/":                 operators,
	"/jaco.api.AgentService/Logs":              replicaLogs,
	"/jaco.api.AgentService/ListLocalReplicas": replicaLogs,
	"/jaco.api.AgentService/OverlayStatus":     {replicaLogs.allowed, deny("a node's overlay status is for managers and operators")},
	"/jaco.api.AgentService/LoadImage":         {[]identity.Identity{local}, deny("images are loaded on the node itself, through its local socket")},
	// Any node's certificate; the serving node then admits only the node
	// the leader told it to send the volume to (agent/volumemove).
	"/jaco.api.AgentService/ReadVolume":            {[]identity.Identity{worker, manager}, deny("a volume is read only by the node it moves to")},
	"/jaco.api.DispatcherService/":                 dispatcher,
	"/jaco.api.RaftService/":                       raft,
	"/jaco.api.MembershipService/Join":             anyone,
	"/jaco.api.MembershipService/Rejoin":           anyone,
	"/jaco.api.MembershipService/RenewCertificate": {[]identity.Identity{worker, manager}, deny("a node renews its certificate with its certificate")},
	"/jaco.api.MembershipService/UpdateAddress":    {[]identity.Identity{manager}, deny("a manager moves its own raft member, with its manager certificate")},
	"/jaco.api.FormationService/SecretJoin":        anyone,
	"/jaco.api.AdmissionService/Admit":             {[]identity.Identity{manager}, deny("formation admissions come from managers")},
	"/jaco.api.MonitorService/Heartbeat":           {[]identity.Identity{worker, manager}, deny("monitor heartbeats come from the cluster's nodes")},
	"/jaco.api.MonitorService/LastHeard":           {[]identity.Identity{manager}, deny("only managers ask monitors")},
}

func todaysRule(t *testing.T, method string) rule {
	t.Helper()
	if r, ok := todaysRules[method]; ok {
		return r
	}
	service, _, _ := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	if r, ok := todaysRules["/"+service+"/"]; ok {
		return r
	}
	t.Fatalf("%s is new: add the rule it should follow to todaysRules", method)
	return rule{}
}

func TestAuthorizeAllowsTodaysCallers(t *testing.T) {
	for _, method := range apiMethods(t) {
		r := todaysRule(t, method)
		for name, id := range callers {
			err := access.Authorize(method, id)
			if slices.Contains(r.allowed, id) {
				if err != nil {
					t.Errorf("%s, %s: refused (%v), want allowed", method, name, err)
				}
				continue
			}
			if got := refusalOf(err); got != r.refused {
				t.Errorf("%s, %s: got %+v, want %+v", method, name, got, r.refused)
			}
		}
	}
}

func TestHealthIsOpenInEveryState(t *testing.T) {
	for _, method := range []string{"/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch"} {
		if !access.Open(method) {
			t.Errorf("%s is not open: supervisors probe it without credentials", method)
		}
		for name, state := range states {
			if err := access.Gate(method, state); err != nil {
				t.Errorf("%s refused while %s: %v", method, name, err)
			}
		}
		if err := access.Authorize(method, anonymous); err != nil {
			t.Errorf("%s refused to an anonymous caller: %v", method, err)
		}
	}
	if access.Open("/jaco.api.ClusterService/Status") {
		t.Error("a jaco method is open without identification")
	}
}

func TestMethodWithoutPolicyIsRefused(t *testing.T) {
	for _, method := range []string{"/jaco.api.ControlService/Undeclared", "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"} {
		want := refusal{codes.PermissionDenied, reason.PermissionDenied, method + " declares no access policy"}
		for name, state := range states {
			if got := refusalOf(access.Gate(method, state)); got != want {
				t.Errorf("gate of %s while %s: got %+v, want %+v", method, name, got, want)
			}
		}
		for name, id := range callers {
			if got := refusalOf(access.Authorize(method, id)); got != want {
				t.Errorf("%s called by %s: got %+v, want %+v", method, name, got, want)
			}
		}
	}
}

func TestRegisterRefusesADuplicate(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a second policy for a registered method was accepted")
		}
	}()
	access.Register(map[string]access.Policy{"/jaco.api.ClusterService/Status": {Allow: []access.Caller{access.Local}}})
}
