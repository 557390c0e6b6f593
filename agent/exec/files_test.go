package exec

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/testenv"
)

func lookupIn(m map[string]string) FileLookup {
	return func(ref *api.FileReference) (*api.FileSpec, bool) {
		v, ok := m[ref.GetName()]
		if !ok {
			return nil, false
		}
		return &api.FileSpec{Name: ref.GetName(), Data: []byte(v)}, true
	}
}

func TestResolveFilesDefaults(t *testing.T) {
	spec := &api.ServiceSpec{
		Secrets: []*api.FileReference{
			{Name: "db_pass", Id: "s1"},
			{Name: "tls_key", Target: "tls/key.pem", Mode: 0o440, Uid: 1000, Gid: 1001},
			{Name: "abs", Target: "/etc/abs"},
		},
		Configs: []*api.FileReference{
			{Name: "app.conf"},
			{Name: "nginx", Target: "/etc/nginx/nginx.conf", Mode: 0o640},
			{Name: "rel", Target: "rel.conf"},
		},
	}
	files, err := ResolveFiles(spec,
		lookupIn(map[string]string{"db_pass": "a", "tls_key": "b", "abs": "c"}),
		lookupIn(map[string]string{"app.conf": "d", "nginx": "e", "rel": "f"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		path, rel string
		mode      fs.FileMode
		uid, gid  uint32
		secret    bool
		data      string
	}{
		{"/run/secrets/db_pass", "db_pass", 0o444, 0, 0, true, "a"},
		{"/run/secrets/tls/key.pem", "tls/key.pem", 0o440, 1000, 1001, true, "b"},
		{"/etc/abs", "etc/abs", 0o444, 0, 0, true, "c"},
		{"/app.conf", "app.conf", 0o444, 0, 0, false, "d"},
		{"/etc/nginx/nginx.conf", "etc/nginx/nginx.conf", 0o640, 0, 0, false, "e"},
		{"/rel.conf", "rel.conf", 0o444, 0, 0, false, "f"},
	}
	if len(files) != len(want) {
		t.Fatalf("got %d files, want %d: %v", len(files), len(want), files)
	}
	for i, w := range want {
		f := files[i]
		if f.Path != w.path || f.Rel() != w.rel || f.Mode != w.mode || f.UID != w.uid || f.GID != w.gid || f.Secret != w.secret || string(f.Data) != w.data {
			t.Errorf("file %d = %v rel %s, want %+v", i, f, f.Rel(), w)
		}
	}
	if files[0].ID != "s1" {
		t.Errorf("id = %q, want s1", files[0].ID)
	}
}

func TestResolveFilesRefusesBadTargets(t *testing.T) {
	none := lookupIn(nil)
	for _, target := range []string{"../etc/passwd", "a/../../b", "/", "/run/secrets", "a//b", "./a", "a/", "x\x00y"} {
		spec := &api.ServiceSpec{Secrets: []*api.FileReference{{Name: "s", Target: target}}}
		if _, err := ResolveFiles(spec, none, none); err == nil {
			t.Errorf("target %q accepted", target)
		}
	}
	twice := &api.ServiceSpec{
		Secrets: []*api.FileReference{{Name: "a", Target: "/x"}},
		Configs: []*api.FileReference{{Name: "b", Target: "/x"}},
	}
	if _, err := ResolveFiles(twice, none, none); err == nil {
		t.Error("two files at /x accepted")
	}
}

// A reference the node lacks is left out, and CheckFiles names it.
func TestCheckFilesNamesTheMissingOne(t *testing.T) {
	spec := &api.ServiceSpec{
		Secrets: []*api.FileReference{{Name: "here"}, {Name: "gone"}},
		Configs: []*api.FileReference{{Name: "conf"}},
	}
	files, err := ResolveFiles(spec, lookupIn(map[string]string{"here": "x"}), lookupIn(map[string]string{"conf": "y"}))
	if err != nil {
		t.Fatal(err)
	}
	r := Replica{Task: &api.Task{Spec: spec}, Files: files}
	var missing *MissingFileError
	if err := r.CheckFiles(); !errors.As(err, &missing) || !missing.Secret || missing.Name != "gone" || !strings.Contains(err.Error(), `secret "gone"`) {
		t.Fatalf("CheckFiles = %v, want secret gone missing", err)
	}
	r.Files = append(r.Files, File{Secret: true, Name: "gone"})
	if err := r.CheckFiles(); err != nil {
		t.Fatalf("CheckFiles with every file = %v", err)
	}
}

// Neither fmt nor slog ever prints a file's content.
func TestFileNeverPrintsItsData(t *testing.T) {
	f := File{Secret: true, Name: "db_pass", Path: "/run/secrets/db_pass", Mode: 0o400, Data: []byte("hunter2-value")}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("file", "f", f, "files", []File{f}, "replica", Replica{Files: []File{f}})
	for _, s := range []string{fmt.Sprint(f), fmt.Sprintf("%+v", f), fmt.Sprintf("%#v", f), fmt.Sprintf("%v", []File{f}), fmt.Sprintf("%+v", Replica{Files: []File{f}}), buf.String()} {
		if strings.Contains(s, "hunter2") || strings.Contains(s, "104 117 110") {
			t.Errorf("printed the content: %s", s)
		}
	}
}

// WriteFiles puts the files on a tmpfs with their mode and owner, again
// after the tmpfs went away; RemoveFiles unmounts it and leaves nothing.
func TestWriteAndRemoveFilesOnTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "mounting a tmpfs needs root")
	}
	r := Replica{Dir: t.TempDir(), Files: []File{
		{Secret: true, Name: "s", Path: "/run/secrets/s", Mode: 0o400, UID: 1234, GID: 99, Data: []byte("secret-bytes")},
		{Name: "c", Path: "/etc/app/c.conf", Mode: 0o444, Data: []byte("config-bytes")},
	}}
	t.Cleanup(func() { _ = r.RemoveFiles() })
	check := func() {
		t.Helper()
		var sfs syscall.Statfs_t
		if err := syscall.Statfs(r.FilesDir(), &sfs); err != nil || sfs.Type != 0x01021994 {
			t.Fatalf("files dir is not a tmpfs: %v type %#x", err, sfs.Type)
		}
		for _, f := range r.Files {
			p := r.HostPath(f)
			b, err := os.ReadFile(p)
			if err != nil || !bytes.Equal(b, f.Data) {
				t.Fatalf("%s: %q, %v", p, b, err)
			}
			fi, _ := os.Stat(p)
			st := fi.Sys().(*syscall.Stat_t)
			if fi.Mode().Perm() != f.Mode || st.Uid != f.UID || st.Gid != f.GID {
				t.Errorf("%s: mode %v uid %d gid %d, want %v %d %d", p, fi.Mode().Perm(), st.Uid, st.Gid, f.Mode, f.UID, f.GID)
			}
		}
		if fi, err := os.Stat(r.FilesDir()); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("files dir mode: %v, %v", fi.Mode().Perm(), err)
		}
	}
	if err := r.WriteFiles(); err != nil {
		t.Fatal(err)
	}
	check()
	if got, want := r.SecretsHostDir()+"/s", r.HostPath(r.Files[0]); got != want {
		t.Errorf("secret at %s, want %s", want, got)
	}
	if err := r.WriteFiles(); err != nil { // again: harmless, no second mount
		t.Fatal(err)
	}
	// The tmpfs gone (as after a reboot of the mount, not of the node):
	// writing again brings the files back.
	if err := syscall.Unmount(r.FilesDir(), 0); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFiles(); err != nil {
		t.Fatal(err)
	}
	check()
	if err := r.RemoveFiles(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(r.FilesDir()); !os.IsNotExist(err) {
		t.Fatalf("files dir after RemoveFiles: %v", err)
	}
	if m, _ := os.ReadFile("/proc/self/mountinfo"); bytes.Contains(m, []byte(r.FilesDir())) {
		t.Fatalf("still mounted: %s", r.FilesDir())
	}
	if err := r.RemoveFiles(); err != nil {
		t.Fatalf("second RemoveFiles: %v", err)
	}
	bare := Replica{Dir: t.TempDir()}
	if err := bare.WriteFiles(); err != nil {
		t.Fatalf("no files: %v", err)
	}
	if _, err := os.Stat(filepath.Join(bare.Dir, "files")); !os.IsNotExist(err) {
		t.Errorf("a replica without files got a files dir: %v", err)
	}
}
