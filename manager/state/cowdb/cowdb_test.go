package cowdb

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// obj is a test object: an id, a group (a non-unique index) and a name
// (an index that leaves out the empty name).
type obj struct{ id, group, name string }

// The same table twice: "t" holds bare pointers, "e" encoded objects.
var (
	indexes = []Index{
		{Name: "group", Key: func(o any) (string, bool) { return o.(*obj).group, true }},
		{Name: "name", Key: func(o any) (string, bool) { n := o.(*obj).name; return n, n != "" }},
		{Name: "grouped", Key: func(o any) (string, bool) { return o.(*obj).group, true }, Grouped: true},
	}
	schema = &Schema{
		ID: func(o any) string { return o.(*obj).id },
		Tables: []Table{
			{Name: "t", Type: TypeOf[obj](), Indexes: indexes},
			{Name: "e", Type: EncodedOf[obj](objCodec), Indexes: indexes},
		},
	}
	tableNames = []string{"t", "e"}
)

// unencodable is a group objCodec refuses.
const unencodable = "\xff unencodable"

// objCodec encodes an obj as three fields of a block.
var objCodec = Codec{
	Size: func(o any) int {
		x := o.(*obj)
		return 3*binary.MaxVarintLen64 + len(x.id) + len(x.group) + len(x.name)
	},
	Append: func(b []byte, o any) ([]byte, error) {
		x := o.(*obj)
		if x.group == unencodable {
			return nil, errors.New("unencodable")
		}
		return appendField(appendField(appendField(b, x.id), x.group), x.name), nil
	},
	Decode: func(data []byte) (any, error) {
		id, _, rest := next(data)
		group, _, rest := next(rest)
		name, _, rest := next(rest)
		if len(rest) != 0 {
			return nil, fmt.Errorf("%d bytes after an obj", len(rest))
		}
		return &obj{string(id), string(group), string(name)}, nil
	},
}

// model is what a version must hold.
type model map[string]obj

// check compares both tables of v with m through every read and fails t
// on the first difference; it must run on t's goroutine.
func check(t *testing.T, v *Version, m model) {
	t.Helper()
	if err := differs(v, m); err != nil {
		t.Fatal(err)
	}
}

// differs returns the first difference between a table of v and m found
// through every read, nil when there is none.
func differs(v *Version, m model) error {
	for _, name := range tableNames {
		if err := tableDiffers(v, name, m); err != nil {
			return fmt.Errorf("table %s: %w", name, err)
		}
	}
	return nil
}

func tableDiffers(v *Version, table string, m model) error {
	ids := slices.Sorted(maps.Keys(m))
	var got []string
	v.All(table, "", func(o any) bool { got = append(got, o.(*obj).id); return true })
	if !slices.Equal(got, ids) {
		return fmt.Errorf("All = %v, want %v", got, ids)
	}
	if v.Len(table) != len(m) {
		return fmt.Errorf("Len = %d, want %d", v.Len(table), len(m))
	}
	for _, id := range ids {
		if o, _ := v.Get(table, id).(*obj); o == nil || *o != m[id] {
			return fmt.Errorf("Get(%s) = %v, want %v", id, o, m[id])
		}
		if !v.Has(table, id) {
			return fmt.Errorf("Has(%s) = false", id)
		}
	}
	for _, g := range []string{testGroup(0), testGroup(1), testGroup(2)} {
		var want, got []string
		for _, id := range ids {
			if m[id].group == g {
				want = append(want, id)
			}
		}
		for _, index := range []string{"group", "grouped"} {
			got = got[:0]
			v.Each(table, index, g, "", func(o any) bool { got = append(got, o.(*obj).id); return true })
			if !slices.Equal(got, want) {
				return fmt.Errorf("Each(%s %s) = %v, want %v", index, g, got, want)
			}
			if len(want) > 1 { // from after the first
				got = got[:0]
				v.Each(table, index, g, want[0], func(o any) bool { got = append(got, o.(*obj).id); return true })
				if !slices.Equal(got, want[1:]) {
					return fmt.Errorf("Each(%s %s after %s) = %v, want %v", index, g, want[0], got, want[1:])
				}
			}
			if o, _ := v.First(table, index, g).(*obj); len(want) > 0 && (o == nil || o.id != want[0]) {
				return fmt.Errorf("First(%s %s) = %v, want %s", index, g, o, want[0])
			}
		}
	}
	type keyID struct{ key, id string }
	var wantKeys, gotKeys []keyID
	for _, id := range ids {
		wantKeys = append(wantKeys, keyID{m[id].group, id})
	}
	slices.SortFunc(wantKeys, func(a, b keyID) int { return cmp.Or(strings.Compare(a.key, b.key), strings.Compare(a.id, b.id)) })
	v.EachKey(table, "group", func(key, id string) bool { gotKeys = append(gotKeys, keyID{key, id}); return true })
	if !slices.Equal(gotKeys, wantKeys) {
		return fmt.Errorf("EachKey(group) = %v, want %v", gotKeys, wantKeys)
	}
	var named int
	v.Each(table, "name", "", "", func(any) bool { named++; return true })
	if named != 0 {
		return fmt.Errorf("%d objects indexed under an empty name", named)
	}
	for _, id := range ids {
		if n := m[id].name; n != "" {
			if o := v.First(table, "name", n); o == nil || o.(*obj).name != n {
				return fmt.Errorf("First(name %s) = %v", n, o)
			}
		}
	}
	return nil
}

// Random writes on copies of copies: each committed version keeps what
// it held when committed, whatever its copies do afterwards, and every
// index agrees with the objects.
func TestVersionsKeepTheirContent(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	type kept struct {
		v *Version
		m model
	}
	history := []kept{{New(schema), model{}}}
	for range 300 {
		base := history[rng.IntN(len(history))]
		w := base.v.Write()
		m := maps.Clone(base.m)
		for range rng.IntN(40) + 1 {
			id := testID(rng.IntN(200))
			switch rng.IntN(5) {
			case 0:
				for _, table := range tableNames {
					old, _ := w.Delete(table, id).(*obj)
					if was, had := m[id]; had != (old != nil) || had && *old != was {
						t.Fatalf("Delete(%s, %s) returned %v, model had %v", table, id, old, was)
					}
				}
				delete(m, id)
			default:
				o := obj{id: id, group: testGroup(rng.IntN(3))}
				if rng.IntN(2) == 0 {
					o.name = testID(rng.IntN(400))
				}
				for _, table := range tableNames {
					old, _ := w.Insert(table, &obj{o.id, o.group, o.name}).(*obj)
					if was, had := m[id]; had != (old != nil) || had && *old != was {
						t.Fatalf("Insert(%s, %s) replaced %v, model had %v", table, id, old, was)
					}
				}
				m[id] = o
			}
		}
		if rng.IntN(50) == 0 {
			for _, table := range tableNames {
				w.Clear(table)
			}
			m = model{}
		}
		check(t, w, m) // reads of a writable version see its writes
		history = append(history, kept{w.Commit(), m})
	}
	for _, k := range history {
		check(t, k.v, k.m)
	}
}

// A grouped index whose keys all hash alike holds every key's objects
// interleaved in one run; reads by key still see only the key's own.
func TestGroupedKeysThatCollide(t *testing.T) {
	defer func(h func(string) uint64) { groupHash = h }(groupHash)
	groupHash = func(string) uint64 { return 0 }
	TestVersionsKeepTheirContent(t)
}

// testID is short for even n and, for odd n, longer than the 8 bytes
// prefix reads, with those 8 bytes shared: both ways of comparing run.
func testID(n int) string {
	if n%2 == 0 {
		return fmt.Sprintf("o%03d", n)
	}
	return fmt.Sprintf("sharedpfx-%03d", n)
}

// testGroup is a group key; groups 1 and 2 share the 8 bytes an index
// compares first and differ after them, so a read through the index must
// tell them apart by the keys themselves.
func testGroup(n int) string {
	if n == 0 {
		return "g0"
	}
	return fmt.Sprintf("sharedpfx-g%d", n)
}

// prefix orders any two strings as they order, or ties.
func TestPrefixOrdersAsStrings(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	alphabet := []byte{0, 1, 'a', 'b', 0xff}
	random := func() string {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for ti := range schema.Tables {
		l := newLayout(schema, &schema.Tables[ti])
		at := func(o *obj) item { return item{prefix(o.id), l.put(o)} } // in the id tree
		for range 50_000 {
			a, b := random(), random()
			pa, pb := prefix(a), prefix(b)
			if (pa < pb && a >= b) || (pa > pb && a <= b) {
				t.Fatalf("prefix(%q) = %x, prefix(%q) = %x: not in the strings' order", a, pa, b, pb)
			}
			// Two stored objects, and one against a lookup.
			ita, itb := at(&obj{id: a}), at(&obj{id: b})
			if l.idLess(ita, itb) != (a < b) || (l.idCmp(b)(ita) < 0) != (a < b) || (l.idCmp(b)(ita) == 0) != (a == b) {
				t.Fatalf("%s: id order of %q and %q: less %v, cmp %d", l.schema.Name, a, b, l.idLess(ita, itb), l.idCmp(b)(ita))
			}
			// Keys tie often with this alphabet: the ids decide then.
			oa, ob := &obj{id: random(), group: a}, &obj{id: random(), group: b}
			ita, itb = item{prefix(a), l.put(oa)}, item{prefix(b), l.put(ob)}
			want := strings.Compare(a, b)
			if want == 0 {
				want = strings.Compare(oa.id, ob.id)
			}
			if got := l.keyLess[0](ita, itb); got != (want < 0) {
				t.Fatalf("%s: keyLess(%q/%q, %q/%q) = %v, want %v", l.schema.Name, a, oa.id, b, ob.id, got, want < 0)
			}
			if got := l.keyCmp(0, b, ob.id)(ita); got != want {
				t.Fatalf("%s: keyCmp(%q/%q) of %q/%q = %d, want %d", l.schema.Name, b, ob.id, a, oa.id, got, want)
			}
		}
	}
}

// Readers of a committed version run while other goroutines copy it and
// write their copies (go test -race checks the sharing).
func TestConcurrentCopiesAndReads(t *testing.T) {
	base := New(schema).Write()
	m := model{}
	for i := range 2000 {
		o := obj{id: fmt.Sprintf("o%04d", i), group: fmt.Sprintf("g%d", i%3)}
		for _, table := range tableNames {
			base.Insert(table, &o)
		}
		m[o.id] = o
	}
	v := base.Commit()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				w := v.Write()
				for j := range 20 {
					for _, table := range tableNames {
						w.Insert(table, &obj{id: fmt.Sprintf("o%04d", (g*1000+i*20+j)%2000), group: "g9"})
					}
				}
				w.Commit()
			}
		})
		wg.Go(func() {
			for range 5 {
				if err := differs(v, m); err != nil {
					t.Error(err) // not Fatal: this is not the test's goroutine
					return
				}
			}
		})
	}
	wg.Wait()
	check(t, v, m)
}

// fieldSize is what appendField adds, across varint lengths.
func TestFieldSize(t *testing.T) {
	for _, n := range []int{0, 1, 126, 127, 128, 16382, 16383, 16384, 1 << 21} {
		s := strings.Repeat("x", n)
		if got, want := fieldSize(s), len(appendField(nil, s)); got != want {
			t.Errorf("fieldSize of %d bytes = %d, appendField adds %d", n, got, want)
		}
	}
}

// AllEncoded hands out each object's encoding, in id order.
func TestAllEncoded(t *testing.T) {
	w := New(schema).Write()
	for _, o := range []obj{{"b", "g", ""}, {"a", "g", "n"}, {"c", "h", "m"}} {
		w.Insert("e", &o)
	}
	var got []obj
	w.Commit().AllEncoded("e", func(data []byte) bool {
		o, err := objCodec.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, *o.(*obj))
		return len(got) < 2
	})
	if want := []obj{{"a", "g", "n"}, {"b", "g", ""}}; !slices.Equal(got, want) {
		t.Fatalf("AllEncoded until the second = %v, want %v", got, want)
	}
}

// An object read from an encoded table is the reader's: changing it
// changes nothing stored.
func TestEncodedReadsAreCopies(t *testing.T) {
	w := New(schema).Write()
	w.Insert("e", &obj{id: "a", group: "g", name: "n"})
	v := w.Commit()
	got := v.Get("e", "a").(*obj)
	got.group, got.name = "changed", "changed"
	if again := v.Get("e", "a").(*obj); *again != (obj{"a", "g", "n"}) {
		t.Fatalf("stored object changed through a read: %v", again)
	}
}

func TestMisuse(t *testing.T) {
	v := New(schema)
	for name, f := range map[string]func(){
		"write to a committed version":     func() { v.Insert("t", &obj{id: "a"}) },
		"copy of a version being written":  func() { v.Write().Write() },
		"unknown table":                    func() { v.Get("nope", "a") },
		"unknown index":                    func() { v.First("t", "nope", "a") },
		"commit of a committed version":    func() { v.Commit() },
		"object of another type":           func() { v.Write().Insert("t", obj{id: "a"}) },
		"nil object":                       func() { v.Write().Insert("t", (*obj)(nil)) },
		"object of another type, encoded":  func() { v.Write().Insert("e", obj{id: "a"}) },
		"nil object, encoded":              func() { v.Write().Insert("e", (*obj)(nil)) },
		"encodings of a table of pointers": func() { v.AllEncoded("t", func([]byte) bool { return true }) },
		"object that does not encode":      func() { v.Write().Insert("e", &obj{id: "a", group: unencodable}) },
		"keys of a grouped index in order": func() { v.EachKey("t", "grouped", func(string, string) bool { return true }) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
