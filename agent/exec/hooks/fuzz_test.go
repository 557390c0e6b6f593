package hooks

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// FuzzBundle: a hook bundle as it arrives in a task (decoded from the
// wire) is refused with ErrInvalidBundle, or is hooks only, launch among
// them, and writes exactly those files inside the bundle directory: no
// name reaches outside it.
func FuzzBundle(f *testing.F) {
	for _, files := range []map[string][]byte{
		{api.HookLaunch: []byte("#!/bin/sh\nexec sleep 1\n")},
		{api.HookPrepare: []byte("#!/bin/sh\n"), api.HookLaunch: []byte("#!/bin/sh\n"), api.HookCleanup: nil},
		{"../launch": []byte("x"), api.HookLaunch: nil},
		{api.HookFinish: []byte("#!/bin/sh\n")},
	} {
		b, err := proto.Marshal(&api.HookBundle{Files: files})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var b api.HookBundle
		if err := proto.Unmarshal(data, &b); err != nil {
			return
		}
		if err := validateBundle(b.Files); err != nil {
			if !errors.Is(err, ErrInvalidBundle) {
				t.Fatalf("validateBundle error %v does not wrap ErrInvalidBundle", err)
			}
			return
		}
		if _, ok := b.Files[api.HookLaunch]; !ok {
			t.Fatal("a bundle without launch passed")
		}
		root := t.TempDir()
		dir := filepath.Join(root, "bundle")
		if err := writeBundle(dir, b.Files); err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(root)
		if err != nil || len(entries) != 1 {
			t.Fatalf("the bundle wrote beside its directory: %v %v", entries, err)
		}
		written, err := os.ReadDir(dir)
		if err != nil || len(written) != len(b.Files) {
			t.Fatalf("wrote %d files for %d hooks: %v", len(written), len(b.Files), err)
		}
		for _, e := range written {
			got, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if !slices.Contains(api.HookNames, e.Name()) || err != nil || !bytes.Equal(got, b.Files[e.Name()]) {
				t.Fatalf("hook %s written wrong: %v", e.Name(), err)
			}
		}
	})
}
