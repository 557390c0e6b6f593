package backupfile_test

import (
	"bytes"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/manager/backup/backupfile"
	"github.com/jaco-project/jaco/manager/backup/internal/backuptest"
)

func sealedFile(t *testing.T, b *backupfile.Backup) ([]byte, backupfile.Key) {
	t.Helper()
	payload, err := b.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	k, err := backupfile.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	file, err := backupfile.Seal(payload, k)
	if err != nil {
		t.Fatal(err)
	}
	return file, k
}

func TestSealedBackupRoundTrips(t *testing.T) {
	b := backuptest.Backup(t)
	file, k := sealedFile(t, b)
	if bytes.Contains(file, b.Snapshot.Store.Clusters[0].CaKeyPem[30:60]) || bytes.Contains(file, []byte("worker-1")) {
		t.Fatal("sealed file holds store content in clear")
	}
	parsed, err := backupfile.ParseKey(k.String())
	if err != nil {
		t.Fatalf("ParseKey(%q): %v", k.String(), err)
	}
	got, err := backupfile.Decode(file, parsed)
	if err != nil {
		t.Fatal(err)
	}
	if got.ClusterID != b.ClusterID || got.Index != b.Index || got.Term != b.Term || !got.TakenAt.Equal(b.TakenAt) {
		t.Errorf("header = %+v, want %+v", got, b)
	}
	if !proto.Equal(got.Snapshot, b.Snapshot) {
		t.Errorf("snapshot differs after the round trip")
	}
}

func TestOpenRefusesBadFiles(t *testing.T) {
	file, k := sealedFile(t, backuptest.Backup(t))
	other, err := backupfile.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		c := bytes.Clone(file)
		c[i] ^= 0x40
		return c
	}
	for _, tc := range []struct {
		name string
		file []byte
		key  backupfile.Key
		want error
	}{
		{"empty", nil, k, backupfile.ErrTruncated},
		{"cut in the magic", file[:5], k, backupfile.ErrTruncated},
		{"cut after the key id", file[:16], k, backupfile.ErrTruncated},
		{"cut in the body", file[:len(file)/2], k, backupfile.ErrCorrupted},
		{"last byte missing", file[:len(file)-1], k, backupfile.ErrCorrupted},
		{"byte flipped in the body", flip(len(file) / 2), k, backupfile.ErrCorrupted},
		{"byte flipped in the tag", flip(len(file) - 1), k, backupfile.ErrCorrupted},
		{"wrong key", file, other, backupfile.ErrWrongKey},
		{"not a backup", []byte("hello, this is a text file and not a backup at all"), k, backupfile.ErrNotBackup},
		{"newer format", append([]byte("JACOBAK\x02"), file[8:]...), k, backupfile.ErrNotBackup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := backupfile.Decode(tc.file, tc.key)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Decode = %v, %v; want %v", b, err, tc.want)
			}
		})
	}
}

func TestParseKeyRefusesOtherText(t *testing.T) {
	k, err := backupfile.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	s := k.String()
	for _, in := range []string{"", "JBK1-", s[:len(s)-1], s + "A", "XBK1-" + s[5:], s[5:], "JBK1-" + s[5:len(s)-1] + "!"} {
		if _, err := backupfile.ParseKey(in); !errors.Is(err, backupfile.ErrBadKey) {
			t.Errorf("ParseKey(%q) = %v, want ErrBadKey", in, err)
		}
	}
	if got, err := backupfile.ParseKey("  " + s + "\n"); err != nil || got != k {
		t.Errorf("ParseKey with white space = %v, %v", got, err)
	}
}

func TestUnmarshalRefusesUnrestorablePayloads(t *testing.T) {
	for _, tc := range []struct {
		name  string
		alter func(b *backupfile.Backup)
	}{
		{"no cluster id", func(b *backupfile.Backup) { b.ClusterID = "" }},
		{"zero index", func(b *backupfile.Backup) { b.Index = 0 }},
		{"zero term", func(b *backupfile.Backup) { b.Term = 0 }},
		{"no Cluster object", func(b *backupfile.Backup) { b.Snapshot.Store.Clusters = nil }},
		{"another cluster's object", func(b *backupfile.Backup) { b.Snapshot.Store.Clusters[0].Id = "cluster-2" }},
		{"no CA key", func(b *backupfile.Backup) { b.Snapshot.Store.Clusters[0].CaKeyPem = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := backuptest.Backup(t)
			tc.alter(b)
			data, err := b.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := backupfile.Unmarshal(data); !errors.Is(err, backupfile.ErrFormat) {
				t.Fatalf("Unmarshal = %v, want ErrFormat", err)
			}
		})
	}
	data, err := backuptest.Backup(t).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{0, 7, 12, 20} {
		if _, err := backupfile.Unmarshal(data[:cut]); !errors.Is(err, backupfile.ErrFormat) {
			t.Errorf("Unmarshal of %d bytes = %v, want ErrFormat", cut, err)
		}
	}
}
