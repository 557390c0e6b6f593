package raftproxy

import (
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/jaco-project/jaco/protobuf/plugin/internal/pluginopt"
)

// The options of api/options.proto this plugin reads.
const (
	raftproxyOption = "jaco.api.raftproxy"
	localReadOption = "jaco.api.local_read"
)

// options reads the raftproxy options from descriptors.
type options struct{ *pluginopt.Options }

// findOptions looks the option declarations up in the request. When
// api/options.proto is not among its files, nothing can be marked.
func findOptions(gen *protogen.Plugin) (*options, error) {
	o, err := pluginopt.Find(gen, map[protoreflect.FullName]protoreflect.Kind{
		raftproxyOption: protoreflect.BoolKind,
		localReadOption: protoreflect.BoolKind,
	})
	if err != nil {
		return nil, err
	}
	return &options{o}, nil
}

// wrapped reports whether s is marked (jaco.api.raftproxy) = true.
func (o *options) wrapped(s *protogen.Service) (bool, error) {
	return o.flag(s.Desc.Options(), raftproxyOption)
}

// localRead reports whether m is marked (jaco.api.local_read) = true.
func (o *options) localRead(m *protogen.Method) (bool, error) {
	return o.flag(m.Desc.Options(), localReadOption)
}

func (o *options) flag(opts protoreflect.ProtoMessage, name protoreflect.FullName) (bool, error) {
	v, set, err := o.Get(opts, name)
	if err != nil || !set {
		return false, err
	}
	return v.Bool(), nil
}
