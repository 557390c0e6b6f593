package raftproxy

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"

	"github.com/jaco-project/jaco/protobuf/plugin/internal/plugintest"
)

// The golden test's input: testdata/raftproxytest.proto compiled by protoc
// (make generate) into a descriptor set, so the test needs no protoc.
const (
	goldenProto    = "raftproxytest.proto"
	descriptorSet  = "testdata/raftproxytest.pb"
	goldenWrappers = "testdata/raftproxytest" + suffix
)

// run generates goldenProto in-process, as protoc-gen-raftproxy would,
// after edit (if any) has changed its descriptor.
func run(t *testing.T, edit func(*descriptorpb.FileDescriptorProto)) (*pluginpb.CodeGeneratorResponse, error) {
	t.Helper()
	set := plugintest.Descriptors(t, descriptorSet)
	if edit != nil {
		edit(plugintest.File(t, set, goldenProto))
	}
	return plugintest.Run(t, set, goldenProto, Generate)
}

func serviceNamed(t *testing.T, f *descriptorpb.FileDescriptorProto, name string) *descriptorpb.ServiceDescriptorProto {
	t.Helper()
	for _, s := range f.Service {
		if s.GetName() == name {
			return s
		}
	}
	t.Fatalf("%s has no service %s", f.GetName(), name)
	return nil
}

func TestGolden(t *testing.T) {
	resp, err := run(t, nil)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	// Golden wants one file: ItemService is wrapped, the unmarked PeerService is not.
	if got := plugintest.Golden(t, resp, goldenWrappers); strings.Contains(got, "PeerService") {
		t.Errorf("unmarked PeerService got a wrapper")
	}
}

func TestNoOutputWithoutMarkedService(t *testing.T) {
	resp, err := run(t, func(f *descriptorpb.FileDescriptorProto) {
		for _, s := range f.Service {
			s.Options = nil
		}
	})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if len(resp.File) != 0 {
		t.Fatalf("generated %d files for a proto with no marked service", len(resp.File))
	}
}

func TestRefusesClientStreams(t *testing.T) {
	for _, tt := range []struct {
		name           string
		serverStreams  bool
		wantInErrorMsg string
	}{
		{name: "client streaming", wantInErrorMsg: "client-streaming"},
		{name: "bidirectional", serverStreams: true, wantInErrorMsg: "bidirectional"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, func(f *descriptorpb.FileDescriptorProto) {
				for _, m := range serviceNamed(t, f, "ItemService").Method {
					if m.GetName() == "Put" {
						m.ClientStreaming = proto.Bool(true)
						m.ServerStreaming = proto.Bool(tt.serverStreams)
					}
				}
			})
			if err == nil {
				t.Fatal("Generate accepted a client stream in a wrapped service")
			}
			for _, want := range []string{"jaco.raftproxytest.ItemService.Put", tt.wantInErrorMsg} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
		})
	}
}

func TestClientStreamInUnmarkedServiceIsIgnored(t *testing.T) {
	resp, err := run(t, func(f *descriptorpb.FileDescriptorProto) {
		for _, m := range serviceNamed(t, f, "PeerService").Method {
			m.ClientStreaming = proto.Bool(true)
			m.ServerStreaming = proto.Bool(true)
		}
	})
	if err != nil {
		t.Fatalf("Generate refused a stream in an unmarked service: %v", err)
	}
	if len(resp.File) != 1 {
		t.Fatalf("generated %d files, want 1", len(resp.File))
	}
}
