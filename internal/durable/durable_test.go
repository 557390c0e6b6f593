package durable

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileReplacesWholeAndLeavesNoTemporaries(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "key")
	for _, content := range []string{"first", "second, longer"} {
		if err := WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read back %q, %v; want %q", got, err, content)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("dir holds %d entries, want only the file", len(entries))
	}
	if err := WriteFile(filepath.Join(dir, "missing", "x"), nil, 0o600); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}

// TestWriteFilePartsJoinsParts: parts of any size, empty ones too, make
// exactly their concatenation.
func TestWriteFilePartsJoinsParts(t *testing.T) {
	var parts [][]byte
	var want []byte
	for i, n := range []int{3, 1<<20 - 1, 2, 2<<20 + 5, 0, 7} {
		p := make([]byte, n)
		for j := range p {
			p[j] = byte(i*31 + j)
		}
		parts = append(parts, p)
		want = append(want, p...)
	}
	path := filepath.Join(t.TempDir(), "big")
	if err := WriteFileParts(path, 0o600, parts...); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes, want the %d written in parts", len(got), len(want))
	}
}
