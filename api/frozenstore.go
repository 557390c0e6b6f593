package api

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// FrozenStore is a store's content fixed for a snapshot: the objects it
// keeps decoded, and, of the lists whose objects it keeps encoded, their
// wire forms, which a snapshot carries as they are rather than decoding
// the whole table to encode it again.
type FrozenStore struct {
	Objects *StoreSnapshot
	Encoded []EncodedObjects
}

// EncodedObjects are objects of one StoreSnapshot list, each its message's
// wire form.
type EncodedObjects struct {
	Field   protowire.Number // of StoreSnapshot
	Objects [][]byte
}

// AppendElements appends objs as elements of e's list: a StoreSnapshot's
// wire form, which decodes (merged) to a snapshot holding them.
func (e EncodedObjects) AppendElements(b []byte, objs [][]byte) []byte {
	for _, o := range objs {
		b = protowire.AppendTag(b, e.Field, protowire.BytesType)
		b = protowire.AppendBytes(b, o)
	}
	return b
}

// ElementsSize is the length AppendElements adds for objs.
func (e EncodedObjects) ElementsSize(objs [][]byte) int {
	n := 0
	for _, o := range objs {
		n += protowire.SizeTag(e.Field) + protowire.SizeBytes(len(o))
	}
	return n
}

// Decoded is the whole content as one StoreSnapshot: Objects with the
// encoded lists decoded into it. Objects is not changed.
func (f FrozenStore) Decoded() (*StoreSnapshot, error) {
	snap := proto.CloneOf(f.Objects)
	if snap == nil {
		snap = &StoreSnapshot{}
	}
	for _, e := range f.Encoded {
		if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(e.AppendElements(nil, e.Objects), snap); err != nil {
			return nil, fmt.Errorf("decode the encoded list %d of a store: %w", e.Field, err)
		}
	}
	return snap, nil
}
