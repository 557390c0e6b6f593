// Command protoc-gen-raftproxy is the protoc plugin that writes
// leader-forwarding gRPC wrappers; see package
// github.com/jaco-project/jaco/protobuf/plugin/raftproxy.
//
// Use it next to protoc-gen-go and protoc-gen-go-grpc:
//
//	protoc --raftproxy_out=DIR --raftproxy_opt=paths=source_relative ...
package main

import (
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/types/pluginpb"

	"github.com/jaco-project/jaco/protobuf/plugin/raftproxy"
)

func main() {
	protogen.Options{}.Run(func(gen *protogen.Plugin) error {
		gen.SupportedFeatures = uint64(pluginpb.CodeGeneratorResponse_FEATURE_PROTO3_OPTIONAL)
		return raftproxy.Generate(gen)
	})
}
