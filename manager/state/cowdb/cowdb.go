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
//   - A table holds pointers of one type (Table.Type). Unknown table or
//     index names, and objects of another type, are the caller's bug:
//     they panic.
//
// The store (manager/state/store) keeps its content in it: docs/design.md
// §7, and ADR 0044 for why not go-memdb (its radix trees cost about 1 KB
// a task and a channel per tree node).
package cowdb

import (
	"cmp"
	"encoding/binary"
	"fmt"
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
// third smaller (docs/adr/0053).
type Type struct {
	ptr func(obj any) (unsafe.Pointer, bool)
	obj func(p unsafe.Pointer) any
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
// bytes, the whole id or key read from the object when those tie. With
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
// which in a large table is a cache miss each (issue 15: the lookups of
// a write into 300 000 join tokens went mostly there).
func prefix(s string) uint64 {
	var b [8]byte
	copy(b[:], s)
	return binary.BigEndian.Uint64(b[:])
}

// layout is what every version needs of one table's schema, made once:
// where each index is, and how its trees order their items.
type layout struct {
	schema  *Table
	id      func(obj any) string // Schema.ID
	index   map[string]int       // secondary index name → position
	idLess  func(a, b item) bool
	keyLess []func(a, b item) bool // in Table.Indexes order
}

func newLayout(s *Schema, t *Table) *layout {
	if t.Type.ptr == nil {
		panic(fmt.Sprintf("cowdb: table %q has no Type", t.Name))
	}
	l := &layout{schema: t, id: s.ID, index: map[string]int{}}
	l.idLess = func(a, b item) bool {
		if a.head != b.head {
			return a.head < b.head
		}
		return l.idAt(a) < l.idAt(b)
	}
	for i := range t.Indexes {
		ix := &t.Indexes[i]
		l.index[ix.Name] = i
		l.keyLess = append(l.keyLess, func(a, b item) bool {
			if a.head != b.head {
				return a.head < b.head
			}
			if ka, kb := l.keyAt(ix, a), l.keyAt(ix, b); ka != kb {
				return ka < kb
			}
			return l.idAt(a) < l.idAt(b)
		})
	}
	return l
}

// obj is the object at it.
func (l *layout) obj(it item) any { return l.schema.Type.obj(it.p) }

// idAt is the id of the object at it.
func (l *layout) idAt(it item) string { return l.id(l.obj(it)) }

// keyAt is the key in ix of the object at it (which held, since the
// object is in the index).
func (l *layout) keyAt(ix *Index, it item) string {
	key, _ := ix.Key(l.obj(it))
	return key
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

// keyCmp finds, in ix's tree, the object with key and id, or where it
// would be: before the others with key when id is "".
func (l *layout) keyCmp(ix *Index, key, id string) func(item) int {
	head := prefix(key)
	return func(it item) int {
		if it.head != head {
			return cmp.Compare(it.head, head)
		}
		if c := strings.Compare(l.keyAt(ix, it), key); c != 0 {
			return c
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
	p, ok := tb.schema.Type.ptr(obj)
	if !ok {
		panic(fmt.Sprintf("cowdb: %T stored in table %q", obj, tableName))
	}
	tr := v.own(tb)
	id := tb.id(obj)
	old, had := tr.byID.ReplaceOrInsert(item{prefix(id), p})
	for i := range tb.schema.Indexes {
		ix := &tb.schema.Indexes[i]
		key, ok := ix.Key(obj)
		if had {
			if oldKey, oldOK := ix.Key(tb.obj(old)); oldOK && (!ok || oldKey != key) {
				tr.secondary[i].Delete(tb.keyCmp(ix, oldKey, id))
			}
		}
		if ok {
			tr.secondary[i].ReplaceOrInsert(item{prefix(key), p})
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
	obj := tb.obj(old)
	for i := range tb.schema.Indexes {
		ix := &tb.schema.Indexes[i]
		if key, ok := ix.Key(obj); ok {
			tr.secondary[i].Delete(tb.keyCmp(ix, key, id))
		}
	}
	return obj
}

// Clear removes every object of table.
func (v *Version) Clear(tableName string) {
	v.mustWrite()
	tb := v.table(tableName)
	tb.trees, tb.owned = tb.emptyTrees(), true
}
