package cowdb

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// tokenSchema is a table shaped like the store's join tokens: random
// hex ids and one secondary index on a random hash.
var tokenSchema = &Schema{
	ID: func(o any) string { return o.(*obj).id },
	Tables: []Table{{Name: "t", Type: TypeOf[obj](), Indexes: []Index{
		{Name: "hash", Key: func(o any) (string, bool) { return o.(*obj).name, true }},
	}}},
}

func randomHex(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return hex.EncodeToString(b)
}

// BenchmarkInsertBatches inserts objects with random ids and index keys
// into a large table, a batch of them per version, as the store applies
// a Ready's worth of small writes (most of a follower's CPU
// under a write load went there). ns/op is one object's insert.
func BenchmarkInsertBatches(b *testing.B) {
	for _, size := range []int{1_000, 300_000} {
		for _, batch := range []int{1, 32} {
			b.Run(fmt.Sprintf("size=%d/batch=%d", size, batch), func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 2))
				v := New(tokenSchema).Write()
				for range size {
					v.Insert("t", &obj{id: randomHex(r, 12), name: randomHex(r, 32)})
				}
				v = v.Commit()
				objs := make([]*obj, b.N)
				for i := range objs {
					objs[i] = &obj{id: randomHex(r, 12), name: randomHex(r, 32)}
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i += batch {
					w := v.Write()
					for _, o := range objs[i:min(i+batch, b.N)] {
						if w.Get("t", o.id) != nil {
							b.Fatal("id taken")
						}
						w.Insert("t", o)
					}
					v = w.Commit()
				}
			})
		}
	}
}

// groupedTable returns a committed table of n objects with random ids,
// spread evenly over groups groups (the "group" index), as tasks are over
// their services.
func groupedTable(r *rand.Rand, n, groups int) (*Version, []*obj) {
	v := New(schema).Write()
	objs := make([]*obj, n)
	for i := range objs {
		objs[i] = &obj{id: randomHex(r, 12), group: fmt.Sprintf("group-%08d", i%groups)}
		v.Insert("t", objs[i])
	}
	return v.Commit(), objs
}

// BenchmarkGet looks objects up by id in a table of 300 000. ns/op is one
// lookup.
func BenchmarkGet(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	v, objs := groupedTable(r, 300_000, 1_000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		o := objs[r.IntN(len(objs))]
		if v.Get("t", o.id) != o {
			b.Fatal("lookup missed")
		}
	}
}

// BenchmarkEach reads the objects of one group through a non-unique index
// of a table of 300 000, as the scheduler reads the tasks of a service.
// ns/op is one object read.
func BenchmarkEach(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const groups = 1_000
	v, _ := groupedTable(r, 300_000, groups)
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; {
		v.Each("t", "group", fmt.Sprintf("group-%08d", r.IntN(groups)), "", func(any) bool {
			n++
			return true
		})
	}
}

// BenchmarkFullGC times a full garbage collection with a table of 400 000
// objects live: the marking every GC cycle of a manager repeats over its
// store. ns/op is one collection.
func BenchmarkFullGC(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	v := New(tokenSchema).Write()
	for range 400_000 {
		v.Insert("t", &obj{id: randomHex(r, 12), name: randomHex(r, 32)})
	}
	v = v.Commit()
	runtime.GC()
	b.ResetTimer()
	for range b.N {
		runtime.GC()
	}
	b.StopTimer()
	runtime.KeepAlive(v)
}
