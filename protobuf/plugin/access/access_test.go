package access

import (
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/pluginpb"

	"github.com/jaco-project/jaco/protobuf/plugin/internal/plugintest"
)

// The golden test's input: testdata/accesstest.proto compiled by protoc
// (make generate) into a descriptor set, so the test needs no protoc.
const (
	goldenProto   = "accesstest.proto"
	descriptorSet = "testdata/accesstest.pb"
	goldenOutput  = "testdata/accesstest" + suffix
)

func descriptors(t *testing.T) *descriptorpb.FileDescriptorSet {
	t.Helper()
	return plugintest.Descriptors(t, descriptorSet)
}

// run generates in-process, as protoc-gen-access would, for set.
func run(t *testing.T, set *descriptorpb.FileDescriptorSet) (*pluginpb.CodeGeneratorResponse, error) {
	t.Helper()
	return plugintest.Run(t, set, goldenProto, Generate)
}

// rpc returns the descriptor of service.name in the golden proto of set.
func rpc(t *testing.T, set *descriptorpb.FileDescriptorSet, service, name string) *descriptorpb.MethodDescriptorProto {
	t.Helper()
	for _, s := range plugintest.File(t, set, goldenProto).Service {
		for _, m := range s.Method {
			if s.GetName() == service && m.GetName() == name {
				return m
			}
		}
	}
	t.Fatalf("%s has no rpc %s.%s", goldenProto, service, name)
	return nil
}

// setPolicy replaces m's options with (jaco.api.access) = {text}, encoded
// from the AccessPolicy declaration in set as protoc would send it: as
// unknown fields of MethodOptions.
func setPolicy(t *testing.T, set *descriptorpb.FileDescriptorSet, m *descriptorpb.MethodDescriptorProto, text string) {
	t.Helper()
	files, err := protodesc.NewFiles(set)
	if err != nil {
		t.Fatalf("descriptors: %v", err)
	}
	d, err := files.FindDescriptorByName(accessOption)
	if err != nil {
		t.Fatalf("find %s: %v", accessOption, err)
	}
	xt := dynamicpb.NewExtensionType(d.(protoreflect.ExtensionDescriptor))
	policy := dynamicpb.NewMessage(xt.TypeDescriptor().Message())
	if err := prototext.Unmarshal([]byte(text), policy); err != nil {
		t.Fatalf("policy %q: %v", text, err)
	}
	known := &descriptorpb.MethodOptions{}
	known.ProtoReflect().Set(xt.TypeDescriptor(), protoreflect.ValueOfMessage(policy))
	b, err := proto.Marshal(known)
	if err != nil {
		t.Fatalf("marshal options: %v", err)
	}
	m.Options = &descriptorpb.MethodOptions{}
	if err := proto.Unmarshal(b, m.Options); err != nil {
		t.Fatalf("unmarshal options: %v", err)
	}
}

func TestGolden(t *testing.T) {
	resp, err := run(t, descriptors(t))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	plugintest.Golden(t, resp, goldenOutput)
}

// TestRoundTrip checks the test's own encoding of a policy: the golden
// policy of Ping, rewritten by setPolicy, generates the golden output.
func TestRoundTrip(t *testing.T) {
	set := descriptors(t)
	setPolicy(t, set, rpc(t, set, "PeerService", "Ping"),
		`allow: [NODE, MANAGER] also_served: [WORKER] refusal: "peers only: \"ping\" is for nodes — not for you"`)
	resp, err := run(t, set)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	want, err := os.ReadFile(goldenOutput)
	if err != nil {
		t.Fatalf("read golden: %v", err)
	}
	if got := resp.File[0].GetContent(); got != string(want) {
		t.Errorf("re-encoded policy generates\n%s\nwant\n%s", got, want)
	}
}

func TestNoOutputWithoutServices(t *testing.T) {
	set := descriptors(t)
	plugintest.File(t, set, goldenProto).Service = nil
	resp, err := run(t, set)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if len(resp.File) != 0 {
		t.Fatalf("generated %d files for a proto without services", len(resp.File))
	}
}

func TestRefusesRPCWithoutPolicy(t *testing.T) {
	set := descriptors(t)
	rpc(t, set, "ItemService", "Put").Options = nil
	_, err := run(t, set)
	if err == nil {
		t.Fatal("Generate accepted an rpc without an access policy")
	}
	for _, want := range []string{"jaco.accesstest.ItemService.Put", "declares no access policy"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestRefusesMalformedPolicies(t *testing.T) {
	for _, tt := range []struct {
		name, policy, wantInError string
	}{
		{"no callers", `refusal: "no"`, "allows nobody"},
		{"unspecified caller", `allow: [CALLER_UNSPECIFIED] refusal: "no"`, "CALLER_UNSPECIFIED"},
		{"repeated caller", `allow: [LOCAL, LOCAL] refusal: "no"`, "LOCAL listed twice"},
		{"anyone and more", `allow: [ANYONE, LOCAL] refusal: "no"`, "ANYONE stands alone"},
		{"anyone with a refusal", `allow: [ANYONE] refusal: "no"`, "never given"},
		{"anyone unauthenticated", `allow: [ANYONE] unauthenticated: true`, "never given"},
		{"no refusal", `allow: [LOCAL]`, "no refusal"},
		{"unspecified state", `allow: [ANYONE] also_served: [STATE_UNSPECIFIED]`, "STATE_UNSPECIFIED"},
		{"repeated state", `allow: [ANYONE] also_served: [WORKER, WORKER]`, "WORKER listed twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set := descriptors(t)
			setPolicy(t, set, rpc(t, set, "PeerService", "Ping"), tt.policy)
			_, err := run(t, set)
			if err == nil {
				t.Fatalf("Generate accepted {%s}", tt.policy)
			}
			for _, want := range []string{"jaco.accesstest.PeerService.Ping", tt.wantInError} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
