// Package plugintest runs a protoc plugin's generator in-process for the
// plugin's tests, and checks its output against a golden file.
//
// The input is a descriptor set that make generate compiles from a proto in
// the plugin's testdata, so the tests need no protoc. The golden file is the
// output a reviewer has read; go test -update rewrites it after a deliberate
// change to the generator.
package plugintest

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

// Declared here, not in each plugin's test, so that every test binary
// importing this package has the flag Golden obeys.
var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// Descriptors reads the descriptor set at path.
func Descriptors(t testing.TB, path string) *descriptorpb.FileDescriptorSet {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read descriptor set (make generate writes it): %v", err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	return &set
}

// File returns the descriptor of the proto file name in set, for a test to
// read or edit before Run.
func File(t testing.TB, set *descriptorpb.FileDescriptorSet, name string) *descriptorpb.FileDescriptorProto {
	t.Helper()
	for _, f := range set.File {
		if f.GetName() == name {
			return f
		}
	}
	t.Fatalf("descriptor set has no file %s", name)
	return nil
}

// Run generates file (the rest of set being its imports) with generate, as
// protoc would run the plugin with paths=source_relative. The error is
// generate's own, for tests of what the plugin refuses; any other failure
// fails the test.
func Run(t testing.TB, set *descriptorpb.FileDescriptorSet, file string, generate func(*protogen.Plugin) error) (*pluginpb.CodeGeneratorResponse, error) {
	t.Helper()
	gen, err := protogen.Options{}.New(&pluginpb.CodeGeneratorRequest{
		FileToGenerate: []string{file},
		Parameter:      proto.String("paths=source_relative"),
		ProtoFile:      set.File,
	})
	if err != nil {
		t.Fatalf("protogen: %v", err)
	}
	if err := generate(gen); err != nil {
		return nil, err
	}
	resp := gen.Response()
	if resp.Error != nil {
		t.Fatalf("response error: %s", resp.GetError())
	}
	return resp, nil
}

// Golden checks that resp is exactly one file, named as the golden file at
// path, and that its content is the golden file's; with -update it rewrites
// the golden file instead of comparing. It returns the generated content for
// the test's own assertions.
func Golden(t testing.TB, resp *pluginpb.CodeGeneratorResponse, path string) string {
	t.Helper()
	if len(resp.File) != 1 || resp.File[0].GetName() != filepath.Base(path) {
		var names []string
		for _, f := range resp.File {
			names = append(names, f.GetName())
		}
		t.Fatalf("generated %v, want only %s", names, filepath.Base(path))
	}
	got := resp.File[0].GetContent()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatalf("update golden: %v", err)
		}
		return got
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden: %v", err)
	}
	if got != string(want) {
		t.Errorf("generated code differs from %s (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
	return got
}
