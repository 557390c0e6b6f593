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
//   - Unknown table or index names are the caller's bug: they panic.
//
// The store (manager/state/store) keeps its content in it: docs/design.md
// §7, and ADR 0044 for why not go-memdb (its radix trees cost about 1 KB
// a task and a channel per tree node).
package cowdb

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/jaco-project/jaco/manager/state/cowdb/cowtree"
)

// degree of the B-trees: nodes of up to 63 items (24-byte entries and
// refs). In a table of 300 000 (bench_test.go), against 16: a
// full GC 20 % shorter and an index read 20 % faster, an insert 10 %
// slower; with 8, reads took twice as long.
const degree = 32

// Index is a secondary index of a table.
type Index struct {
	Name string
	// Key is obj's key in the index; false leaves obj out of it.
	Key func(obj any) (string, bool)
}

// Table describes one table: its name and secondary indexes. Every table
// is ordered by its objects' ids (Schema.ID).
type Table struct {
	Name    string
	Indexes []Index
}

// Schema is the set of tables and how to read an object's id.
type Schema struct {
	Tables []Table
	ID     func(obj any) string
}

// entry is an object in its table's id order. A tree's node holds its
// entries by value, and a write copies the nodes it changes: an entry is
// the object itself and its id's prefix (24 bytes), its id read through
// the schema when prefixes tie. With the id inline (40 bytes) copying
// nodes cost more; with id and object behind a pointer of their own
// (16 bytes), a table of 400 000 objects held 60 % more heap objects and
// a full GC took 20 % longer (issue 15).
type entry struct {
	head uint64 // prefix of the id
	obj  any    // the object, or a probe
}

// probe stands for an object in a lookup: just its id.
type probe string

func newEntry(id string, obj any) entry { return entry{prefix(id), obj} }

func probeEntry(id string) entry { return entry{prefix(id), probe(id)} }

// ref is an object's place in a secondary index, ordered by its key,
// then its id; held by value like entry, and like it 24 bytes: the key's
// prefix and the object, its key read through the index (Index.Key) when
// prefixes tie. With the key inline (40 bytes) a write into a large table
// copied nodes two thirds larger, and a key made for the index (a join
// token's hash as a string) stayed on the heap beside its object, one
// more for the collector to mark each cycle (docs/adr/0052).
type ref struct {
	head uint64 // prefix(key)
	obj  any    // the object, or a keyProbe
}

// keyProbe stands for an object in an index lookup: its key and id.
type keyProbe struct{ key, id string }

func newRef(key string, obj any) ref { return ref{prefix(key), obj} }

func probeRef(key, id string) ref { return ref{prefix(key), keyProbe{key, id}} }

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

// idOf is obj's id: a probe's own, or a stored object's through ID.
func (s *Schema) idOf(obj any) string {
	switch p := obj.(type) {
	case probe:
		return string(p)
	case keyProbe:
		return p.id
	}
	return s.ID(obj)
}

// keyOf is obj's key in ix: a probe's own, or a stored object's through
// Key (which held, since the object is in the index).
func keyOf(ix *Index, obj any) string {
	if p, ok := obj.(keyProbe); ok {
		return p.key
	}
	key, _ := ix.Key(obj)
	return key
}

func (s *Schema) entryLess(a, b entry) bool {
	if a.head != b.head {
		return a.head < b.head
	}
	return s.idOf(a.obj) < s.idOf(b.obj)
}

// refLess orders the refs of index ix.
func (s *Schema) refLess(ix *Index) func(a, b ref) bool {
	return func(a, b ref) bool {
		if a.head != b.head {
			return a.head < b.head
		}
		if ka, kb := keyOf(ix, a.obj), keyOf(ix, b.obj); ka != kb {
			return ka < kb
		}
		return s.idOf(a.obj) < s.idOf(b.obj)
	}
}

// trees are one table's content: the objects by id and each secondary
// index, in Table.Indexes order. Once a version holding them is
// committed they never change, and every version copied from it shares
// them until it writes to the table.
type trees struct {
	byID      *cowtree.Tree[entry]
	secondary []*cowtree.Tree[ref]
}

// table is one table of a Version.
type table struct {
	schema *Table
	index  map[string]int // secondary index name → position
	// trees is shared with the Version it was copied from until the
	// first write (owned false), which copies them.
	trees *trees
	owned bool
}

// Version is one state of the database. See the package contract.
type Version struct {
	schema *Schema
	// layout is where each table is in tables, by name: one map shared
	// by every version of a database.
	layout   map[string]int
	tables   []table // in Schema.Tables order
	writable bool
}

// New returns an empty committed version of schema.
func New(schema *Schema) *Version {
	v := &Version{schema: schema, layout: map[string]int{}, tables: make([]table, len(schema.Tables))}
	for i := range schema.Tables {
		t := &schema.Tables[i]
		v.layout[t.Name] = i
		index := map[string]int{}
		for j, ix := range t.Indexes {
			index[ix.Name] = j
		}
		v.tables[i] = table{schema: t, index: index, owned: true, trees: emptyTrees(schema, t)}
	}
	return v
}

func emptyTrees(s *Schema, t *Table) *trees {
	tr := &trees{byID: cowtree.New(degree, s.entryLess)}
	for i := range t.Indexes {
		tr.secondary = append(tr.secondary, cowtree.New(degree, s.refLess(&t.Indexes[i])))
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
	w := &Version{schema: v.schema, layout: v.layout, tables: slices.Clone(v.tables), writable: true}
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
	i, ok := v.layout[name]
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
	own := &trees{byID: shared.byID.Clone(), secondary: make([]*cowtree.Tree[ref], 0, len(shared.secondary))}
	for _, s := range shared.secondary {
		own.secondary = append(own.secondary, s.Clone())
	}
	tb.trees, tb.owned = own, true
	return own
}

// Insert stores obj in table, replacing the object with its id, if any,
// and returns the replaced one (nil when none).
func (v *Version) Insert(tableName string, obj any) any {
	v.mustWrite()
	tb := v.table(tableName)
	tr := v.own(tb)
	id := v.schema.ID(obj)
	old, had := tr.byID.ReplaceOrInsert(newEntry(id, obj))
	for i, ix := range tb.schema.Indexes {
		key, ok := ix.Key(obj)
		if had {
			if oldKey, oldOK := ix.Key(old.obj); oldOK && (!ok || oldKey != key) {
				tr.secondary[i].Delete(probeRef(oldKey, id))
			}
		}
		if ok {
			tr.secondary[i].ReplaceOrInsert(newRef(key, obj))
		}
	}
	if !had {
		return nil
	}
	return old.obj
}

// Delete removes the object with id from table and returns it (nil when
// there was none).
func (v *Version) Delete(tableName, id string) any {
	v.mustWrite()
	tb := v.table(tableName)
	tr := v.own(tb)
	old, had := tr.byID.Delete(probeEntry(id))
	if !had {
		return nil
	}
	for i, ix := range tb.schema.Indexes {
		if key, ok := ix.Key(old.obj); ok {
			tr.secondary[i].Delete(probeRef(key, id))
		}
	}
	return old.obj
}

// Clear removes every object of table.
func (v *Version) Clear(tableName string) {
	v.mustWrite()
	tb := v.table(tableName)
	tb.trees, tb.owned = emptyTrees(v.schema, tb.schema), true
}
