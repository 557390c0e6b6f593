package raftproxy

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// The golden test's input: testdata/raftproxytest.proto compiled by protoc
// (make generate) into a descriptor set, so the test needs no protoc.
const (
	goldenProto    = "raftproxytest.proto"
	descriptorSet  = "testdata/raftproxytest.pb"
	goldenWrappers = "testdata/raftproxytest" + suffix
)

// request returns the CodeGeneratorRequest protoc would send for
// goldenProto, after edit (if any) has changed its descriptor.
func request(t *testing.T, edit func(*descriptorpb.FileDescriptorProto)) *pluginpb.CodeGeneratorRequest {
	t.Helper()
	b, err := os.ReadFile(descriptorSet)
	if err != nil {
		t.Fatalf("read descriptor set (make generate writes it): %v", err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		t.Fatalf("parse %s: %v", descriptorSet, err)
	}
	for _, f := range set.File {
		if f.GetName() == goldenProto && edit != nil {
			edit(f)
		}
	}
	return &pluginpb.CodeGeneratorRequest{
		FileToGenerate: []string{goldenProto},
		Parameter:      proto.String("paths=source_relative"),
		ProtoFile:      set.File,
	}
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

// run generates in-process, as protoc-gen-raftproxy would.
func run(t *testing.T, req *pluginpb.CodeGeneratorRequest) (*pluginpb.CodeGeneratorResponse, error) {
	t.Helper()
	gen, err := protogen.Options{}.New(req)
	if err != nil {
		t.Fatalf("protogen: %v", err)
	}
	if err := Generate(gen); err != nil {
		return nil, err
	}
	resp := gen.Response()
	if resp.Error != nil {
		t.Fatalf("response error: %s", resp.GetError())
	}
	return resp, nil
}

func TestGolden(t *testing.T) {
	resp, err := run(t, request(t, nil))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	// One file: ItemService is wrapped, the unmarked PeerService is not.
	if len(resp.File) != 1 || resp.File[0].GetName() != filepath.Base(goldenWrappers) {
		var names []string
		for _, f := range resp.File {
			names = append(names, f.GetName())
		}
		t.Fatalf("generated %v, want only %s", names, filepath.Base(goldenWrappers))
	}
	got := resp.File[0].GetContent()
	if strings.Contains(got, "PeerService") {
		t.Errorf("unmarked PeerService got a wrapper")
	}
	if *update {
		if err := os.WriteFile(goldenWrappers, []byte(got), 0o644); err != nil {
			t.Fatalf("update golden: %v", err)
		}
		return
	}
	want, err := os.ReadFile(goldenWrappers)
	if err != nil {
		t.Fatalf("read golden: %v", err)
	}
	if got != string(want) {
		t.Errorf("generated code differs from %s (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", goldenWrappers, got, want)
	}
}

func TestNoOutputWithoutMarkedService(t *testing.T) {
	resp, err := run(t, request(t, func(f *descriptorpb.FileDescriptorProto) {
		for _, s := range f.Service {
			s.Options = nil
		}
	}))
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
			_, err := run(t, request(t, func(f *descriptorpb.FileDescriptorProto) {
				for _, m := range serviceNamed(t, f, "ItemService").Method {
					if m.GetName() == "Put" {
						m.ClientStreaming = proto.Bool(true)
						m.ServerStreaming = proto.Bool(tt.serverStreams)
					}
				}
			}))
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
	resp, err := run(t, request(t, func(f *descriptorpb.FileDescriptorProto) {
		for _, m := range serviceNamed(t, f, "PeerService").Method {
			m.ClientStreaming = proto.Bool(true)
			m.ServerStreaming = proto.Bool(true)
		}
	}))
	if err != nil {
		t.Fatalf("Generate refused a stream in an unmarked service: %v", err)
	}
	if len(resp.File) != 1 {
		t.Fatalf("generated %d files, want 1", len(resp.File))
	}
}
