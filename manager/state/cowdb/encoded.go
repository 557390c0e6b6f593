package cowdb

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"unsafe"
)

// Codec keeps a table's objects encoded (EncodedOf).
type Codec struct {
	// Size is the length of obj's encoding, Append appends it to b.
	// Every object a table is given must encode: one that cannot is the
	// caller's bug, and Insert panics.
	Size   func(obj any) int
	Append func(b []byte, obj any) ([]byte, error)
	// Decode makes a new object of data, which it must not keep.
	Decode func(data []byte) (any, error)
}

// EncodedOf is the Type of a table of *T kept encoded by c: each object
// is one block of bytes, holding no pointer, with its id and index keys
// first and its encoding after them. The collector marks a block without
// reading it, where a decoded object is a graph of allocations it walks
// every cycle; with most of a manager's heap in its store that walk was
// the slowest writes' wait (docs/adr/0055). Lookups read the id and keys
// in place; every read of an object decodes a new one, which the reader
// owns. For tables written far more than read.
func EncodedOf[T any](c Codec) Type {
	t := TypeOf[T]()
	t.codec = &c
	return t
}

// A block is laid out as
//
//	length  4 bytes, little-endian: the whole block's
//	id      a field
//	keys    a field per index, in Table.Indexes order
//	object  the Codec's encoding, to the end
//
// where a field is its length+1 as a uvarint then its bytes, or 0 alone
// when absent (an object not in that index). An item points to the
// block's first byte; the block is never written again.
const lengthSize = 4

// encoded makes l's items point to blocks made by c.
func (l *layout) encoded(c Codec) {
	t := l.schema
	l.put = func(obj any) unsafe.Pointer {
		if _, ok := t.Type.ptr(obj); !ok {
			panic(fmt.Sprintf("cowdb: %T stored in table %q", obj, t.Name))
		}
		return unsafe.Pointer(unsafe.SliceData(l.block(c, obj)))
	}
	l.obj = func(it item) any {
		obj, err := c.Decode(skip(fields(it), 1+len(t.Indexes)))
		if err != nil {
			panic(fmt.Sprintf("cowdb: decode an object of table %q it encoded: %v", t.Name, err))
		}
		return obj
	}
	l.idAt = func(it item) string {
		id, _, _ := next(fields(it))
		return unsafe.String(unsafe.SliceData(id), len(id))
	}
	l.keyAt = func(i int, it item) (string, bool) {
		k, ok, _ := next(skip(fields(it), 1+i))
		return unsafe.String(unsafe.SliceData(k), len(k)), ok
	}
}

// block encodes obj with its id and keys.
func (l *layout) block(c Codec, obj any) []byte {
	id := l.id(obj)
	keys := make([]string, len(l.schema.Indexes))
	has := make([]bool, len(keys))
	// Sized exactly: the block is the allocation the object costs.
	n := lengthSize + fieldSize(id) + c.Size(obj)
	for i := range l.schema.Indexes {
		keys[i], has[i] = l.schema.Indexes[i].Key(obj)
		n += fieldSize(keys[i])
	}
	b := make([]byte, lengthSize, n)
	b = appendField(b, id)
	for i, k := range keys {
		if !has[i] {
			b = append(b, 0)
			continue
		}
		b = appendField(b, k)
	}
	b, err := c.Append(b, obj)
	if err != nil {
		panic(fmt.Sprintf("cowdb: encode %T for table %q: %v", obj, l.schema.Name, err))
	}
	binary.LittleEndian.PutUint32(b, uint32(len(b)))
	return b
}

// fieldSize is the length appendField adds for s (at most: an absent
// key takes one byte).
func fieldSize(s string) int {
	return (bits.Len64(uint64(len(s))+1)+6)/7 + len(s)
}

func appendField(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))+1), s...)
}

// fields is the block at it after its length.
func fields(it item) []byte {
	n := binary.LittleEndian.Uint32(unsafe.Slice((*byte)(it.p), lengthSize))
	return unsafe.Slice((*byte)(it.p), n)[lengthSize:]
}

// next splits b's first field off: its bytes, whether it is present, and
// what follows it.
func next(b []byte) (field []byte, ok bool, rest []byte) {
	n, w := binary.Uvarint(b)
	if n == 0 {
		return nil, false, b[w:]
	}
	end := w + int(n) - 1
	return b[w:end], true, b[end:]
}

// skip is b after its first n fields.
func skip(b []byte, n int) []byte {
	for range n {
		_, _, b = next(b)
	}
	return b
}

// AllEncoded calls fn with the encoding of every object of table, an
// encoded one (EncodedOf), in id order, until fn returns false. data is
// the stored bytes themselves, never written again: fn may keep it, and
// must not change it.
func (v *Version) AllEncoded(tableName string, fn func(data []byte) bool) {
	tb := v.table(tableName)
	if tb.schema.Type.codec == nil {
		panic(fmt.Sprintf("cowdb: table %q is not encoded", tableName))
	}
	skipped := 1 + len(tb.schema.Indexes)
	tb.trees.byID.Ascend(nil, func(it item) bool {
		data := skip(fields(it), skipped)
		return fn(data[:len(data):len(data)])
	})
}
