// Package pluginopt reads our custom options (api/options.proto) inside a
// protoc plugin.
//
// The options are found by name among the descriptors protoc sends rather
// than through the generated package github.com/jaco-project/jaco/api: that
// package holds the plugins' own output, and a generator that fails to build
// while its output is stale or deleted could never repair it.
package pluginopt

import (
	"fmt"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Options are the extensions a plugin reads, as declared in one request.
type Options struct {
	types  protoregistry.Types
	byName map[protoreflect.FullName]protoreflect.ExtensionType
}

// Find looks the extensions named in want up among the request's files and
// checks each is of the kind want gives it. An extension no file declares is
// left out: no option can then be set, and Get reports it unset.
func Find(gen *protogen.Plugin, want map[protoreflect.FullName]protoreflect.Kind) (*Options, error) {
	o := &Options{byName: map[protoreflect.FullName]protoreflect.ExtensionType{}}
	for _, f := range gen.Files {
		xds := f.Desc.Extensions()
		for i := range xds.Len() {
			xd := xds.Get(i)
			kind, ok := want[xd.FullName()]
			if !ok {
				continue
			}
			if xd.Kind() != kind || xd.IsList() {
				return nil, fmt.Errorf("option %s in %s is a %s, want a single %s", xd.FullName(), f.Desc.Path(), xd.Kind(), kind)
			}
			xt := dynamicpb.NewExtensionType(xd)
			if err := o.types.RegisterExtension(xt); err != nil {
				return nil, fmt.Errorf("register option %s: %w", xd.FullName(), err)
			}
			o.byName[xd.FullName()] = xt
		}
	}
	return o, nil
}

// Get returns the value of the extension name in opts (a descriptor's
// options) and whether it is set.
//
// protoc's options arrive as unknown fields (or as known ones, if some
// linked package registered the extension); a round trip through the wire
// form with a resolver that knows the extension reads both the same way.
func (o *Options) Get(opts proto.Message, name protoreflect.FullName) (protoreflect.Value, bool, error) {
	xt, ok := o.byName[name]
	if !ok {
		return protoreflect.Value{}, false, nil
	}
	b, err := proto.Marshal(opts)
	if err != nil {
		return protoreflect.Value{}, false, fmt.Errorf("marshal options: %w", err)
	}
	parsed := opts.ProtoReflect().New()
	if err := (proto.UnmarshalOptions{Resolver: &o.types}).Unmarshal(b, parsed.Interface()); err != nil {
		return protoreflect.Value{}, false, fmt.Errorf("read option %s: %w", name, err)
	}
	fd := xt.TypeDescriptor()
	if !parsed.Has(fd) {
		return protoreflect.Value{}, false, nil
	}
	return parsed.Get(fd), true, nil
}
