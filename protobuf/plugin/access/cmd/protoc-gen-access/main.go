// Command protoc-gen-access is the protoc plugin that registers each rpc's
// declared access policy with package api/access; see package
// github.com/jaco-project/jaco/protobuf/plugin/access.
//
// Use it next to protoc-gen-go:
//
//	protoc --access_out=DIR --access_opt=paths=source_relative ...
package main

import (
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/types/pluginpb"

	"github.com/jaco-project/jaco/protobuf/plugin/access"
)

func main() {
	protogen.Options{}.Run(func(gen *protogen.Plugin) error {
		gen.SupportedFeatures = uint64(pluginpb.CodeGeneratorResponse_FEATURE_PROTO3_OPTIONAL)
		return access.Generate(gen)
	})
}
