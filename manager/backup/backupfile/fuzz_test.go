package backupfile_test

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/manager/backup/backupfile"
	"github.com/jaco-project/jaco/manager/backup/internal/backuptest"
)

// fuzzKey is fixed so that the seeds sealed with it stay openable in
// every fuzz worker.
var fuzzKey = func() backupfile.Key {
	var k backupfile.Key
	copy(k[:], "a fixed backup key for the fuzz!")
	return k
}()

// FuzzDecode: a backup file handed to restore is refused with one of the
// file's errors unless it is a backup sealed with the key, never a panic.
func FuzzDecode(f *testing.F) {
	b := backuptest.Backup(f)
	payload, err := b.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	file, err := backupfile.Seal(payload, fuzzKey)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(file)
	f.Add(file[:len(file)-1])
	f.Add(file[:20])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, file []byte) {
		got, err := backupfile.Decode(file, fuzzKey)
		if err != nil {
			for _, want := range []error{backupfile.ErrNotBackup, backupfile.ErrTruncated, backupfile.ErrWrongKey,
				backupfile.ErrCorrupted, backupfile.ErrFormat} {
				if errors.Is(err, want) {
					return
				}
			}
			t.Fatalf("Decode error %v is none of the backup file's errors", err)
		}
		if _, err := got.Cluster(); err != nil {
			t.Fatalf("a decoded backup has no restorable Cluster: %v", err)
		}
	})
}

// FuzzUnmarshal: the payload inside the sealed file (header and raft
// snapshot) decodes to a restorable backup or ErrFormat, and a decoded
// one round-trips.
func FuzzUnmarshal(f *testing.F) {
	b := backuptest.Backup(f)
	payload, err := b.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(payload)
	f.Add(payload[:len(payload)/2])
	f.Add(payload[:12])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, payload []byte) {
		got, err := backupfile.Unmarshal(payload)
		if err != nil {
			if !errors.Is(err, backupfile.ErrFormat) {
				t.Fatalf("Unmarshal error %v does not wrap ErrFormat", err)
			}
			return
		}
		again, err := got.Marshal()
		if err != nil {
			t.Fatalf("a decoded backup does not encode: %v", err)
		}
		back, err := backupfile.Unmarshal(again)
		if err != nil {
			t.Fatalf("a re-encoded backup does not decode: %v", err)
		}
		if back.ClusterID != got.ClusterID || back.Index != got.Index || back.Term != got.Term ||
			!back.TakenAt.Equal(got.TakenAt) || !proto.Equal(back.Snapshot, got.Snapshot) {
			t.Fatalf("backup does not round-trip: %+v, then %+v", got, back)
		}
	})
}

// FuzzParseKey: the printed backup key is ErrBadKey unless it is a key,
// and a key parses back from its printed form.
func FuzzParseKey(f *testing.F) {
	s := fuzzKey.String()
	for _, seed := range []string{s, s + "\n", s[:len(s)-1], s + "A", "JBK1-", "", "JBK2-" + s[5:]} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := backupfile.ParseKey(s)
		if err != nil {
			if !errors.Is(err, backupfile.ErrBadKey) {
				t.Fatalf("ParseKey error %v does not wrap ErrBadKey", err)
			}
			return
		}
		if again, err := backupfile.ParseKey(k.String()); err != nil || again != k {
			t.Fatalf("key does not round-trip: %v", err)
		}
	})
}
