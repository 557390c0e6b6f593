package durable

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkSyncBesideLargeWrite times what a WAL feels while a snapshot
// is written beside it: small writes each followed by an fsync, one after
// another, for as long as a 64 MB file is written with WriteFile. Each
// iteration writes the file twice, whole then synced (writeBackEvery 0,
// as before) and with its write-back started as it is written; reported
// are the small syncs' p50, p99 and slowest of each (whole-*, paced-*)
// and how long each large write took. ns/op is meaningless.
func BenchmarkSyncBesideLargeWrite(b *testing.B) {
	dir := b.TempDir()
	big := make([]byte, 64<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	wal, err := os.OpenFile(filepath.Join(dir, "wal"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer wal.Close()
	record := make([]byte, 256)

	// run writes the large file with write-back every `every` bytes and
	// returns the syncs beside it and how long the large write took.
	run := func(every int) (syncs []time.Duration, took time.Duration) {
		defer func(old int) { writeBackEvery = old }(writeBackEvery)
		writeBackEvery = every
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- WriteFile(filepath.Join(dir, "snap"), big, 0o600) }()
		for {
			select {
			case err := <-done:
				if err != nil {
					b.Fatal(err)
				}
				return syncs, time.Since(start)
			default:
			}
			t := time.Now()
			if _, err := wal.Write(record); err != nil {
				b.Fatal(err)
			}
			if err := wal.Sync(); err != nil {
				b.Fatal(err)
			}
			syncs = append(syncs, time.Since(t))
		}
	}
	var whole, paced []time.Duration
	var wholeTook, pacedTook time.Duration
	for b.Loop() {
		s, t := run(0)
		whole, wholeTook = append(whole, s...), wholeTook+t
		s, t = run(1 << 20)
		paced, pacedTook = append(paced, s...), pacedTook+t
	}
	report := func(name string, d []time.Duration, took time.Duration) {
		slices.Sort(d)
		ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
		b.ReportMetric(ms(d[len(d)/2]), name+"-p50-ms")
		b.ReportMetric(ms(d[len(d)*99/100]), name+"-p99-ms")
		b.ReportMetric(ms(d[len(d)-1]), name+"-max-ms")
		b.ReportMetric(ms(took)/float64(b.N), name+"-write-ms")
	}
	report("whole", whole, wholeTook)
	report("paced", paced, pacedTook)
}
