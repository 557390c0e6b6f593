package access_test

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/access"
)

// The runtime value of each AccessPolicy enum value.
var (
	callerOf = map[api.AccessPolicy_Caller]access.Caller{
		api.AccessPolicy_ANYONE:   access.Anyone,
		api.AccessPolicy_LOCAL:    access.Local,
		api.AccessPolicy_OPERATOR: access.Operator,
		api.AccessPolicy_NODE:     access.Node,
		api.AccessPolicy_MANAGER:  access.Manager,
	}
	stateOf = map[api.AccessPolicy_State]access.State{
		api.AccessPolicy_UNINITIALIZED: access.Uninitialized,
		api.AccessPolicy_LOCKED:        access.Locked,
		api.AccessPolicy_WORKER:        access.Worker,
	}
)

// TestEveryRPCDeclaresItsPolicy walks every service of the files package
// api links (api/*.proto) and fails on an rpc with no (jaco.api.access)
// option, or whose registered policy is not the one its option declares
// (generated code older than its .proto).
func TestEveryRPCDeclaresItsPolicy(t *testing.T) {
	methods := 0
	protoregistry.GlobalFiles.RangeFiles(func(f protoreflect.FileDescriptor) bool {
		if f.Package() != "jaco.api" {
			return true
		}
		for i := range f.Services().Len() {
			s := f.Services().Get(i)
			for j := range s.Methods().Len() {
				m := s.Methods().Get(j)
				methods++
				checkDeclared(t, "/"+string(s.FullName())+"/"+string(m.Name()), m)
			}
		}
		return true
	})
	if methods == 0 {
		t.Fatal("no rpc in package jaco.api: are its files linked?")
	}
}

func checkDeclared(t *testing.T, method string, m protoreflect.MethodDescriptor) {
	t.Helper()
	opts, _ := m.Options().(*descriptorpb.MethodOptions)
	declared, _ := proto.GetExtension(opts, api.E_Access).(*api.AccessPolicy)
	if declared == nil {
		t.Errorf("%s declares no access policy: add option (jaco.api.access) in %s", method, m.ParentFile().Path())
		return
	}
	want := access.Policy{Refusal: declared.Refusal, Unauthenticated: declared.Unauthenticated}
	for _, c := range declared.Allow {
		want.Allow = append(want.Allow, callerOf[c])
	}
	for _, s := range declared.AlsoServed {
		want.AlsoServed = append(want.AlsoServed, stateOf[s])
	}
	got, ok := access.Lookup(method)
	if !ok {
		t.Errorf("%s declares a policy that is not registered: run make generate", method)
		return
	}
	if !slices.Equal(got.Allow, want.Allow) || !slices.Equal(got.AlsoServed, want.AlsoServed) ||
		got.Refusal != want.Refusal || got.Unauthenticated != want.Unauthenticated {
		t.Errorf("%s: registered policy %+v, its option declares %+v: run make generate", method, got, want)
	}
}
