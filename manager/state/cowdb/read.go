package cowdb

import "fmt"

// Get returns the object with id in table, nil when there is none.
func (v *Version) Get(tableName, id string) any {
	e, ok := v.table(tableName).trees.byID.Get(probeEntry(id))
	if !ok {
		return nil
	}
	return e.obj
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
	i, ok := tb.index[index]
	if !ok {
		panic(fmt.Sprintf("cowdb: no index %q in table %q", index, tableName))
	}
	ix, from := &tb.schema.Indexes[i], probeRef(key, after)
	tb.trees.secondary[i].AscendGreaterOrEqual(from, func(r ref) bool {
		if r.head != from.head || keyOf(ix, r.obj) != key {
			return false
		}
		if after != "" && v.schema.ID(r.obj) == after {
			return true
		}
		return fn(r.obj)
	})
}

// All calls fn with every object of table, in id order, from the first id
// after after ("" for all), until fn returns false.
func (v *Version) All(tableName, after string, fn func(obj any) bool) {
	v.table(tableName).trees.byID.AscendGreaterOrEqual(probeEntry(after), func(e entry) bool {
		if after != "" && v.schema.ID(e.obj) == after {
			return true
		}
		return fn(e.obj)
	})
}

// Len is the number of objects in table.
func (v *Version) Len(tableName string) int {
	return v.table(tableName).trees.byID.Len()
}
