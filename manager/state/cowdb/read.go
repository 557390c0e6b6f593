package cowdb

import "fmt"

// Get returns the object with id in table, nil when there is none.
func (v *Version) Get(tableName, id string) any {
	tb := v.table(tableName)
	it, ok := tb.trees.byID.Get(tb.idCmp(id))
	if !ok {
		return nil
	}
	return tb.obj(it)
}

// First returns the first object, in id order, whose key in index is key,
// nil when there is none.
func (v *Version) First(tableName, index, key string) any {
	var found any
	v.Each(tableName, index, key, "", func(obj any) bool {
		found = obj
		return false
	})
	return found
}

// Each calls fn with the objects whose key in index is key, in id order,
// from the first id after after ("" for all), until fn returns false.
func (v *Version) Each(tableName, index, key, after string, fn func(obj any) bool) {
	tb := v.table(tableName)
	i := tb.secondaryIndex(index)
	run := tb.keyRun(i)
	head := tb.keyHead(i, key, after) & run
	tb.trees.secondary[i].Ascend(tb.keyCmp(i, key, after), func(it item) bool {
		if it.head&run != head {
			return false
		}
		if k, _ := tb.keyAt(i, it); k != key {
			// Ordered by key, the key's objects are behind; grouped, one
			// whose key hashes alike may come between them.
			return tb.grouped(i)
		}
		if after != "" && tb.idAt(it) == after {
			return true
		}
		return fn(tb.obj(it))
	})
}

// EachKey calls fn with the key and id of every object in index, in key
// then id order, until fn returns false. It reads no object: what fn
// wants of one it gets (Get). A grouped index has no key order: it
// panics.
func (v *Version) EachKey(tableName, index string, fn func(key, id string) bool) {
	tb := v.table(tableName)
	i := tb.secondaryIndex(index)
	if tb.grouped(i) {
		panic(fmt.Sprintf("cowdb: index %q of table %q is grouped, not in key order", index, tb.schema.Name))
	}
	tb.trees.secondary[i].Ascend(nil, func(it item) bool {
		key, _ := tb.keyAt(i, it)
		return fn(key, tb.idAt(it))
	})
}

// All calls fn with every object of table, in id order, from the first id
// after after ("" for all), until fn returns false.
func (v *Version) All(tableName, after string, fn func(obj any) bool) {
	tb := v.table(tableName)
	var from func(item) int
	if after != "" {
		from = tb.idCmp(after)
	}
	tb.trees.byID.Ascend(from, func(it item) bool {
		if after != "" && tb.idAt(it) == after {
			return true
		}
		return fn(tb.obj(it))
	})
}

// secondaryIndex is the position of the named secondary index, or a
// panic.
func (l *layout) secondaryIndex(name string) int {
	i, ok := l.index[name]
	if !ok {
		panic(fmt.Sprintf("cowdb: no index %q in table %q", name, l.schema.Name))
	}
	return i
}

// Has tells whether table holds an object with id, without reading it.
func (v *Version) Has(tableName, id string) bool {
	tb := v.table(tableName)
	_, ok := tb.trees.byID.Get(tb.idCmp(id))
	return ok
}

// Len is the number of objects in table.
func (v *Version) Len(tableName string) int {
	return v.table(tableName).trees.byID.Len()
}
