// Package cowdb is an in-memory database of tables of objects, each
// ordered by id, with secondary indexes, whose versions share structure:
// a write copies only the B-tree nodes it changes (copy on write).
//
// Contract:
//   - A Version is a set of tables. A committed Version (Commit's result,
//     or New's) never changes: any number of goroutines read it at once,
//     and each may take a writable copy of it (Write) while others read.
//   - A writable Version belongs to one goroutine until Commit, which
//     makes it read-only. Discarding it instead costs nothing.
//   - An index maps a string key (Index.Key) to the ids of the objects
//     holding it, in id order; an object whose key is absent (Key's false)
//     is not in that index. Unique indexes are not enforced here: the
//     caller checks (First) before it writes.
//   - A secondary index holds each object under its key and id, so a read
//     through it walks that index alone; an update replaces the object
//     there, moving it only when its key changed.
//   - A table holds pointers of one type (Table.Type): the objects
//     themselves (TypeOf), or their encodings (EncodedOf), when a read
//     decodes a new object the reader owns. Unknown table or index
//     names, and objects of another type, are the caller's bug: they
//     panic.
//
// The store (manager/state/store) keeps its content in it: docs/design.md
// §7, and ADR 0044 for why not go-memdb (its radix trees cost about 1 KB
// a task and a channel per tree node).
package cowdb

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"unsafe"

	"github.com/jaco-project/jaco/manager/state/cowdb/cowtree"
)

// degree of the B-trees: nodes of up to 63 items. With 24-byte items
// (before ADR 0053), in a table of 300 000 (bench_test.go), against 16: a
// full GC 20 % shorter and an index read 20 % faster, an insert 10 %
// slower; with 8, reads took twice as long.
const degree = 32

// Index is a secondary index of a table.
type Index struct {
	Name string
	// Key is obj's key in the index; false leaves obj out of it.
	Key func(obj any) (string, bool)
	// Grouped keeps the objects of one key together but the keys in no
	// order: the index is read by key (Each, First), never in key order
	// (EachKey panics). Its items order by a hash of the key, then by
	// id, and carry the id's first bytes, so the many objects of one key
	// (a service's tasks) compare without reading an object (groupHead).
	Grouped bool
}

// Table describes one table: its name, the type of its objects and its
// secondary indexes. Every table is ordered by its objects' ids
// (Schema.ID).
type Table struct {
	Name    string
	Type    Type
	Indexes []Index
}

// Schema is the set of tables and how to read an object's id.
type Schema struct {
	Tables []Table
	ID     func(obj any) string
}

// Type is how a table's trees hold its objects, all pointers of one type
// (TypeOf): as bare pointers, half the size of the interfaces they come
// in, so that a tree's entries are 16 bytes and a write copies nodes a
// third smaller (docs/adr/0053); or encoded (EncodedOf), one block of
// bytes an object that the collector need not read.
type Type struct {
	ptr   func(obj any) (unsafe.Pointer, bool)
	obj   func(p unsafe.Pointer) any
	codec *Codec // nil: bare pointers
}

// TypeOf is the Type of a table of *T.
func TypeOf[T any]() Type {
	return Type{
		ptr: func(obj any) (unsafe.Pointer, bool) {
			p, ok := obj.(*T)
			return unsafe.Pointer(p), ok && p != nil
		},
		obj: func(p unsafe.Pointer) any { return (*T)(p) },
	}
}

// item is an object's place in one of its table's trees: in id order
// (the table's own tree), or in key then id order (a secondary index's).
// A node holds its items by value, and a write copies the nodes it
// changes, so an item is small: the object and its id's or key's first 8
// bytes (in a grouped index, groupHead), the whole id or key read from
// the object when those tie. With
// the key inline (40 bytes) a write into a large table copied nodes two
// thirds larger (docs/adr/0052); with the object in an interface, half
// again as large as now (docs/adr/0053). Lookups compare items with what
// they seek (idCmp, keyCmp); nothing but objects goes in a tree.
type item struct {
	head uint64         // prefix of the id or key
	p    unsafe.Pointer // the object, of its table's Type
}

// prefix is s's first 8 bytes as a big-endian number, zero-padded: it
// orders strings as their first 8 bytes do. Comparing it first settles
// most comparisons of random ids and keys without reading the strings,
// which in a large table is a cache miss each (the lookups of
// a write into 300 000 join tokens went mostly there).
func prefix(s string) uint64 {
	var b [8]byte
	copy(b[:], s)
	return binary.BigEndian.Uint64(b[:])
}

// groupHash hashes the keys of grouped indexes. Trees live in one
// process only, so any seed orders them; a test makes every key collide.
var groupHash = func(seed maphash.Seed) func(string) uint64 {
	return func(key string) uint64 { return maphash.String(seed, key) }
}(maphash.MakeSeed())

// groupMask is the part of a grouped index's head that is its key's hash.
const groupMask = uint64(1<<24-1) << 40

// groupHead is an item's head in a grouped index: 24 bits of its key's
// hash, then its id's first 5 bytes. Items then order by (hash, id
// prefix, key, id): the objects of one key stay together, in id order,
// and two of them compare by their heads unless their ids share 5 bytes
// (random ids, 25 bits of them, seldom do). A key whose hash another
// shares interleaves with it, and a read by key skips the other's.
// Ordered by key instead, every comparison between tasks of one service
// read both tasks' service and task ids: cache misses that were most of
// the time a restart spent replaying a placement (docs/adr/0057).
func groupHead(key, id string) uint64 {
	return groupHash(key)&groupMask | prefix(id)>>24
}

// layout is what every version needs of one table's schema, made once:
// where each index is, how its trees order their items, and how an item
// holds its object (bare or encoded).
type layout struct {
	schema  *Table
	id      func(obj any) string // Schema.ID
	index   map[string]int       // secondary index name → position
	idLess  func(a, b item) bool
	keyLess []func(a, b item) bool // in Table.Indexes order

	// put makes what an item points to for obj; obj is what it points
	// to, idAt and keyAt read its id and its key in index i (whether it
	// has one) from it.
	put   func(obj any) unsafe.Pointer
	obj   func(it item) any
	idAt  func(it item) string
	keyAt func(i int, it item) (string, bool)
}

func newLayout(s *Schema, t *Table) *layout {
	if t.Type.ptr == nil {
		panic(fmt.Sprintf("cowdb: table %q has no Type", t.Name))
	}
	l := &layout{schema: t, id: s.ID, index: map[string]int{}}
	if t.Type.codec != nil {
		l.encoded(*t.Type.codec)
	} else {
		l.bare()
	}
	l.idLess = func(a, b item) bool {
		if a.head != b.head {
			return a.head < b.head
		}
		return l.idAt(a) < l.idAt(b)
	}
	for i := range t.Indexes {
		l.index[t.Indexes[i].Name] = i
		l.keyLess = append(l.keyLess, func(a, b item) bool {
			if a.head != b.head {
				return a.head < b.head
			}
			ka, _ := l.keyAt(i, a)
			if kb, _ := l.keyAt(i, b); ka != kb {
				return ka < kb
			}
			return l.idAt(a) < l.idAt(b)
		})
	}
	return l
}

// bare makes l's items point to the objects themselves.
func (l *layout) bare() {
	t := l.schema
	l.put = func(obj any) unsafe.Pointer {
		p, ok := t.Type.ptr(obj)
		if !ok {
			panic(fmt.Sprintf("cowdb: %T stored in table %q", obj, t.Name))
		}
		return p
	}
	obj, id := t.Type.obj, l.id // called directly: every comparison reads them
	l.obj = func(it item) any { return obj(it.p) }
	l.idAt = func(it item) string { return id(obj(it.p)) }
	l.keyAt = func(i int, it item) (string, bool) { return t.Indexes[i].Key(obj(it.p)) }
}

// idCmp finds the object with id in the table's own tree.
func (l *layout) idCmp(id string) func(item) int {
	head := prefix(id)
	return func(it item) int {
		if it.head != head {
			return cmp.Compare(it.head, head)
		}
		return strings.Compare(l.idAt(it), id)
	}
}

// grouped tells whether index i is grouped (Index.Grouped).
func (l *layout) grouped(i int) bool { return l.schema.Indexes[i].Grouped }

// keyHead is an item's head in index i for an object with key and id.
func (l *layout) keyHead(i int, key, id string) uint64 {
	if l.grouped(i) {
		return groupHead(key, id)
	}
	return prefix(key)
}

// keyRun is the bits of an item's head in index i that all the objects
// with one key share.
func (l *layout) keyRun(i int) uint64 {
	if l.grouped(i) {
		return groupMask
	}
	return ^uint64(0)
}

// keyCmp finds, in index i's tree, the object with key and id, or where
// it would be: before the others with key when id is "".
func (l *layout) keyCmp(i int, key, id string) func(item) int {
	head := l.keyHead(i, key, id)
	return func(it item) int {
		if it.head != head {
			return cmp.Compare(it.head, head)
		}
		if k, _ := l.keyAt(i, it); k != key {
			return strings.Compare(k, key)
		}
		return strings.Compare(l.idAt(it), id)
	}
}

// trees are one table's content: the objects by id and each secondary
// index, in Table.Indexes order. Once a version holding them is
// committed they never change, and every version copied from it shares
// them until it writes to the table.
type trees struct {
	byID      *cowtree.Tree[item]
	secondary []*cowtree.Tree[item]
}

// table is one table of a Version.
type table struct {
	*layout
	// trees is shared with the Version it was copied from until the
	// first write (owned false), which copies them.
	trees *trees
	owned bool
}

// Version is one state of the database. See the package contract.
type Version struct {
	schema *Schema
	// names is where each table is in tables: one map shared by every
	// version of a database.
	names    map[string]int
	tables   []table // in Schema.Tables order
	writable bool
}

// New returns an empty committed version of schema.
func New(schema *Schema) *Version {
	v := &Version{schema: schema, names: map[string]int{}, tables: make([]table, len(schema.Tables))}
	for i := range schema.Tables {
		l := newLayout(schema, &schema.Tables[i])
		v.names[l.schema.Name] = i
		v.tables[i] = table{layout: l, owned: true, trees: l.emptyTrees()}
	}
	return v
}

func (l *layout) emptyTrees() *trees {
	tr := &trees{byID: cowtree.New(degree, l.idLess)}
	for _, less := range l.keyLess {
		tr.secondary = append(tr.secondary, cowtree.New(degree, less))
	}
	return tr
}

// Write returns a writable copy of v, which must be committed. Its trees
// are copied lazily, table by table, on the first write to each.
func (v *Version) Write() *Version {
	if v.writable {
		panic("cowdb: a copy of a version still being written")
	}
	// Every Update takes one: a slice of tables costs one allocation.
	w := &Version{schema: v.schema, names: v.names, tables: slices.Clone(v.tables), writable: true}
	for i := range w.tables {
		w.tables[i].owned = false
	}
	return w
}

// Commit makes a writable version read-only and returns it.
func (v *Version) Commit() *Version {
	v.mustWrite()
	v.writable = false
	return v
}

func (v *Version) mustWrite() {
	if !v.writable {
		panic("cowdb: write to a committed version")
	}
}

// table returns the named table, or panics.
func (v *Version) table(name string) *table {
	i, ok := v.names[name]
	if !ok {
		panic(fmt.Sprintf("cowdb: no table %q", name))
	}
	return &v.tables[i]
}

// own makes tb's trees this version's own before a write.
func (v *Version) own(tb *table) *trees {
	if tb.owned {
		return tb.trees
	}
	// The shared trees are a committed version's: Clone leaves them as
	// they are, so versions copied from one at once need no lock.
	shared := tb.trees
	own := &trees{byID: shared.byID.Clone(), secondary: make([]*cowtree.Tree[item], 0, len(shared.secondary))}
	for _, s := range shared.secondary {
		own.secondary = append(own.secondary, s.Clone())
	}
	tb.trees, tb.owned = own, true
	return own
}

// Insert stores obj in table, replacing the object with its id, if any,
// and returns the replaced one (nil when none). obj must be a non-nil
// pointer of the table's Type.
func (v *Version) Insert(tableName string, obj any) any {
	v.mustWrite()
	tb := v.table(tableName)
	p := tb.put(obj)
	tr := v.own(tb)
	id := tb.id(obj)
	added := item{prefix(id), p}
	old, had := tr.byID.ReplaceOrInsert(added)
	for i := range tb.schema.Indexes {
		// Read where the item keeps it: an encoded block holds the key
		// put just computed.
		key, ok := tb.keyAt(i, added)
		if had {
			if oldKey, oldOK := tb.keyAt(i, old); oldOK && (!ok || oldKey != key) {
				tr.secondary[i].Delete(tb.keyCmp(i, oldKey, id))
			}
		}
		if ok {
			tr.secondary[i].ReplaceOrInsert(item{tb.keyHead(i, key, id), p})
		}
	}
	if !had {
		return nil
	}
	return tb.obj(old)
}

// Delete removes the object with id from table and returns it (nil when
// there was none).
func (v *Version) Delete(tableName, id string) any {
	v.mustWrite()
	tb := v.table(tableName)
	tr := v.own(tb)
	old, had := tr.byID.Delete(tb.idCmp(id))
	if !had {
		return nil
	}
	for i := range tb.schema.Indexes {
		if key, ok := tb.keyAt(i, old); ok {
			tr.secondary[i].Delete(tb.keyCmp(i, key, id))
		}
	}
	return tb.obj(old)
}

// Clear removes every object of table.
func (v *Version) Clear(tableName string) {
	v.mustWrite()
	tb := v.table(tableName)
	tb.trees, tb.owned = tb.emptyTrees(), true
}
