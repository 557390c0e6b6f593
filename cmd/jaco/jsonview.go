package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/jaco-project/jaco/api/enumword"
)

// jsonObject is a JSON object whose keys keep the order they were added
// in: a proto message's fields in declaration order, so `inspect` and
// `inspect --pretty` read top-down as the .proto does.
type jsonObject []jsonField

type jsonField struct {
	Key   string
	Value any
}

// MarshalJSON writes the fields in order.
func (o jsonObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.Value)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// protoView is the one JSON shape of a stored object that every command
// prints, so a script reads every command alike: keys are the proto field
// names (snake_case); enums are lower-case words without their type's
// prefix (UPDATE_STATE_PAUSED is "paused"); 64-bit integers are JSON
// numbers, not protojson's strings; durations are Go duration strings
// ("5s"); timestamps RFC 3339; bytes base64. Every field is present: an
// unset scalar as its zero value, an unset message (or any field with
// presence, such as a oneof member) as null, an empty list as [] and
// map as {}.
func protoView(m proto.Message) any {
	if m == nil {
		return nil
	}
	r := m.ProtoReflect()
	if !r.IsValid() {
		return nil
	}
	return messageView(r)
}

func messageView(m protoreflect.Message) any {
	switch m.Descriptor().FullName() {
	case "google.protobuf.Timestamp":
		secs, nanos := m.Get(fieldNamed(m, "seconds")).Int(), m.Get(fieldNamed(m, "nanos")).Int()
		return time.Unix(secs, nanos).UTC().Format(time.RFC3339Nano)
	case "google.protobuf.Duration":
		secs, nanos := m.Get(fieldNamed(m, "seconds")).Int(), m.Get(fieldNamed(m, "nanos")).Int()
		return (time.Duration(secs)*time.Second + time.Duration(nanos)).String()
	case "google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue",
		"google.protobuf.Int32Value", "google.protobuf.Int64Value", "google.protobuf.UInt32Value",
		"google.protobuf.UInt64Value", "google.protobuf.FloatValue", "google.protobuf.DoubleValue":
		fd := fieldNamed(m, "value")
		return scalarView(fd, m.Get(fd))
	}
	fields := m.Descriptor().Fields()
	obj := make(jsonObject, 0, fields.Len())
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		obj = append(obj, jsonField{Key: string(fd.Name()), Value: fieldView(m, fd)})
	}
	return obj
}

func fieldNamed(m protoreflect.Message, name protoreflect.Name) protoreflect.FieldDescriptor {
	return m.Descriptor().Fields().ByName(name)
}

func fieldView(m protoreflect.Message, fd protoreflect.FieldDescriptor) any {
	switch {
	case fd.IsList():
		l := m.Get(fd).List()
		out := make([]any, l.Len())
		for i := range out {
			out[i] = valueView(fd, l.Get(i))
		}
		return out
	case fd.IsMap():
		mp := m.Get(fd).Map()
		keys := make([]string, 0, mp.Len())
		vals := map[string]protoreflect.Value{}
		mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
			s := fmt.Sprint(k.Interface())
			keys = append(keys, s)
			vals[s] = v
			return true
		})
		sort.Strings(keys)
		obj := make(jsonObject, len(keys))
		for i, k := range keys {
			obj[i] = jsonField{Key: k, Value: valueView(fd.MapValue(), vals[k])}
		}
		return obj
	case fd.HasPresence() && !m.Has(fd):
		return nil
	}
	return valueView(fd, m.Get(fd))
}

func valueView(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
		return messageView(v.Message())
	}
	return scalarView(fd, v)
}

func scalarView(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return v.Bool()
	case protoreflect.StringKind:
		return v.String()
	case protoreflect.BytesKind:
		return base64.StdEncoding.EncodeToString(v.Bytes())
	case protoreflect.EnumKind:
		return enumWord(fd.Enum(), v.Enum())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return v.Int()
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return v.Uint()
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		// JSON has no NaN or infinities; name them as protojson does.
		switch f := v.Float(); {
		case math.IsNaN(f):
			return "NaN"
		case math.IsInf(f, 1):
			return "Infinity"
		case math.IsInf(f, -1):
			return "-Infinity"
		default:
			return f
		}
	}
	return fmt.Sprint(v.Interface())
}

// enumWord names an enum value as the CLI does everywhere (enumword): a
// number the descriptor does not know (a newer daemon's) stays a JSON
// number.
func enumWord(ed protoreflect.EnumDescriptor, n protoreflect.EnumNumber) any {
	if w, ok := enumword.Name(ed, n); ok {
		return w
	}
	return int64(n)
}
