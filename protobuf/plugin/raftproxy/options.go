package raftproxy

import (
	"fmt"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
)

// The options of api/options.proto this plugin reads.
//
// They are found by name among the descriptors protoc sends rather than
// through the generated package github.com/jaco-project/jaco/api: that
// package holds this plugin's own output, and a generator that fails to
// build while its output is stale or deleted could never repair it.
const (
	raftproxyOption = "jaco.api.raftproxy"
	localReadOption = "jaco.api.local_read"
)

// options reads the raftproxy options from descriptors.
type options struct {
	types        protoregistry.Types
	raftproxyExt protoreflect.ExtensionType // nil when no file declares it
	localReadExt protoreflect.ExtensionType
}

// findOptions looks the option declarations up in the request. When
// api/options.proto is not among its files, nothing can be marked.
func findOptions(gen *protogen.Plugin) (*options, error) {
	o := &options{}
	for _, f := range gen.Files {
		xds := f.Desc.Extensions()
		for i := range xds.Len() {
			xd := xds.Get(i)
			var dst *protoreflect.ExtensionType
			switch xd.FullName() {
			case raftproxyOption:
				dst = &o.raftproxyExt
			case localReadOption:
				dst = &o.localReadExt
			default:
				continue
			}
			if xd.Kind() != protoreflect.BoolKind {
				return nil, fmt.Errorf("option %s in %s is a %s, want bool", xd.FullName(), f.Desc.Path(), xd.Kind())
			}
			*dst = dynamicpb.NewExtensionType(xd)
			if err := o.types.RegisterExtension(*dst); err != nil {
				return nil, fmt.Errorf("register option %s: %w", xd.FullName(), err)
			}
		}
	}
	return o, nil
}

// wrapped reports whether s is marked (jaco.api.raftproxy) = true.
func (o *options) wrapped(s *protogen.Service) (bool, error) {
	return o.flag(s.Desc.Options(), o.raftproxyExt)
}

// localRead reports whether m is marked (jaco.api.local_read) = true.
func (o *options) localRead(m *protogen.Method) (bool, error) {
	return o.flag(m.Desc.Options(), o.localReadExt)
}

// flag reads the bool extension xt of opts. protoc's options arrive as
// unknown fields (or as known ones, if some linked package registered the
// extension); a round trip through the wire form with a resolver that knows
// xt reads both the same way.
func (o *options) flag(opts proto.Message, xt protoreflect.ExtensionType) (bool, error) {
	if xt == nil {
		return false, nil
	}
	b, err := proto.Marshal(opts)
	if err != nil {
		return false, fmt.Errorf("marshal options: %w", err)
	}
	parsed := opts.ProtoReflect().New().Interface()
	if err := (proto.UnmarshalOptions{Resolver: &o.types}).Unmarshal(b, parsed); err != nil {
		return false, fmt.Errorf("read option %s: %w", xt.TypeDescriptor().FullName(), err)
	}
	v, _ := proto.GetExtension(parsed, xt).(bool)
	return v, nil
}
