package cowdb

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// obj is a test object: an id, a group (a non-unique index) and a name
// (an index that leaves out the empty name).
type obj struct{ id, group, name string }

var schema = &Schema{
	ID: func(o any) string { return o.(*obj).id },
	Tables: []Table{{Name: "t", Type: TypeOf[obj](), Indexes: []Index{
		{Name: "group", Key: func(o any) (string, bool) { return o.(*obj).group, true }},
		{Name: "name", Key: func(o any) (string, bool) { n := o.(*obj).name; return n, n != "" }},
	}}},
}

// model is what a version must hold.
type model map[string]obj

// check compares v with m through every read and fails t on the first
// difference; it must run on t's goroutine.
func check(t *testing.T, v *Version, m model) {
	t.Helper()
	if err := differs(v, m); err != nil {
		t.Fatal(err)
	}
}

// differs returns the first difference between v and m found through
// every read, nil when there is none.
func differs(v *Version, m model) error {
	ids := slices.Sorted(maps.Keys(m))
	var got []string
	v.All("t", "", func(o any) bool { got = append(got, o.(*obj).id); return true })
	if !slices.Equal(got, ids) {
		return fmt.Errorf("All = %v, want %v", got, ids)
	}
	if v.Len("t") != len(m) {
		return fmt.Errorf("Len = %d, want %d", v.Len("t"), len(m))
	}
	for _, id := range ids {
		if o, _ := v.Get("t", id).(*obj); o == nil || *o != m[id] {
			return fmt.Errorf("Get(%s) = %v, want %v", id, o, m[id])
		}
	}
	for _, g := range []string{testGroup(0), testGroup(1), testGroup(2)} {
		var want, got []string
		for _, id := range ids {
			if m[id].group == g {
				want = append(want, id)
			}
		}
		v.Each("t", "group", g, "", func(o any) bool { got = append(got, o.(*obj).id); return true })
		if !slices.Equal(got, want) {
			return fmt.Errorf("Each(group %s) = %v, want %v", g, got, want)
		}
		if len(want) > 1 { // from after the first
			got = got[:0]
			v.Each("t", "group", g, want[0], func(o any) bool { got = append(got, o.(*obj).id); return true })
			if !slices.Equal(got, want[1:]) {
				return fmt.Errorf("Each(group %s after %s) = %v, want %v", g, want[0], got, want[1:])
			}
		}
	}
	var named int
	v.Each("t", "name", "", "", func(any) bool { named++; return true })
	if named != 0 {
		return fmt.Errorf("%d objects indexed under an empty name", named)
	}
	for _, id := range ids {
		if n := m[id].name; n != "" {
			if o := v.First("t", "name", n); o == nil || o.(*obj).name != n {
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
				old := w.Delete("t", id)
				if _, had := m[id]; had != (old != nil) {
					t.Fatalf("Delete(%s) returned %v, model had it: %v", id, old, had)
				}
				delete(m, id)
			default:
				o := obj{id: id, group: testGroup(rng.IntN(3))}
				if rng.IntN(2) == 0 {
					o.name = testID(rng.IntN(400))
				}
				w.Insert("t", &o)
				m[id] = o
			}
		}
		if rng.IntN(50) == 0 {
			w.Clear("t")
			m = model{}
		}
		check(t, w, m) // reads of a writable version see its writes
		history = append(history, kept{w.Commit(), m})
	}
	for _, k := range history {
		check(t, k.v, k.m)
	}
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
	l := newLayout(schema, &schema.Tables[0])
	for range 100_000 {
		a, b := random(), random()
		pa, pb := prefix(a), prefix(b)
		if (pa < pb && a >= b) || (pa > pb && a <= b) {
			t.Fatalf("prefix(%q) = %x, prefix(%q) = %x: not in the strings' order", a, pa, b, pb)
		}
		// Two stored objects, and one against a lookup.
		oa, ob := &obj{id: a, group: a}, &obj{id: b, group: b}
		ita, itb := item{prefix(a), unsafe.Pointer(oa)}, item{prefix(b), unsafe.Pointer(ob)}
		if l.idLess(ita, itb) != (a < b) || (l.idCmp(b)(ita) < 0) != (a < b) || (l.idCmp(b)(ita) == 0) != (a == b) {
			t.Fatalf("id order of %q and %q: less %v, cmp %d", a, b, l.idLess(ita, itb), l.idCmp(b)(ita))
		}
		// Keys tie often with this alphabet: the ids decide then.
		oa.id, ob.id = random(), random()
		ix := &schema.Tables[0].Indexes[0]
		want := strings.Compare(a, b)
		if want == 0 {
			want = strings.Compare(oa.id, ob.id)
		}
		if got := l.keyLess[0](ita, itb); got != (want < 0) {
			t.Fatalf("keyLess(%q/%q, %q/%q) = %v, want %v", a, oa.id, b, ob.id, got, want < 0)
		}
		if got := l.keyCmp(ix, b, ob.id)(ita); got != want {
			t.Fatalf("keyCmp(%q/%q) of %q/%q = %d, want %d", b, ob.id, a, oa.id, got, want)
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
		base.Insert("t", &o)
		m[o.id] = o
	}
	v := base.Commit()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				w := v.Write()
				for j := range 20 {
					w.Insert("t", &obj{id: fmt.Sprintf("o%04d", (g*1000+i*20+j)%2000), group: "g9"})
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

func TestMisuse(t *testing.T) {
	v := New(schema)
	for name, f := range map[string]func(){
		"write to a committed version":    func() { v.Insert("t", &obj{id: "a"}) },
		"copy of a version being written": func() { v.Write().Write() },
		"unknown table":                   func() { v.Get("nope", "a") },
		"unknown index":                   func() { v.First("t", "nope", "a") },
		"commit of a committed version":   func() { v.Commit() },
		"object of another type":          func() { v.Write().Insert("t", obj{id: "a"}) },
		"nil object":                      func() { v.Write().Insert("t", (*obj)(nil)) },
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
