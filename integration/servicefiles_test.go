package integration

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSecretsAndConfigsReachReplicasInMemory (docs/design.md §9):
// a secret and a config given to a container service appear in the
// container (the secret at /run/secrets/NAME, mode 0444; the config at
// its target), the secret's value is nowhere on the worker's disk (its
// data dir, containerd's root) while the replica runs nor after it is
// removed, and a secret in use cannot be removed.
func TestSecretsAndConfigsReachReplicasInMemory(t *testing.T) {
	t.Parallel()
	c := newContainerCluster(t, 1)
	m := c.manager
	value := fmt.Sprintf("s3cr3t-%d-value", time.Now().UnixNano())
	src := t.TempDir() // not under any data dir
	secretFile := filepath.Join(src, "secret")
	configFile := filepath.Join(src, "config")
	if err := os.WriteFile(secretFile, []byte(value), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(configFile, []byte("listen 80\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantOK(t, m.jaco("secret", "create", "db_pass", secretFile))
	wantOK(t, m.jaco("config", "create", "app_conf", configFile))
	if r := m.jaco("secret", "inspect", "db_pass", "--format", "json"); r.err() != nil || strings.Contains(r.stdout, value) {
		t.Fatalf("secret inspect: %v; the value must never be shown: %s", r.err(), r.stdout)
	}
	c.createService(t, "app", []string{"--secret", "db_pass", "--config", "source=app_conf,target=/etc/app.conf"}, idleCmd)
	rep := c.waitRunning(t, "app", 1, nil)[0]
	pid, err := c.runningPid(rep.Node, rep.ID)
	if err != nil {
		t.Fatal(err)
	}
	root := fmt.Sprintf("/proc/%d/root", pid)
	got, err := os.ReadFile(root + "/run/secrets/db_pass")
	if err != nil || string(got) != value {
		t.Fatalf("/run/secrets/db_pass in the container: %q, %v", got, err)
	}
	if fi, err := os.Stat(root + "/run/secrets/db_pass"); err != nil || fi.Mode().Perm() != 0o444 {
		t.Fatalf("/run/secrets/db_pass mode: %v, %v; want 0444 (Docker's default)", fi.Mode(), err)
	}
	if got, err := os.ReadFile(root + "/etc/app.conf"); err != nil || string(got) != "listen 80\n" {
		t.Fatalf("/etc/app.conf in the container: %q, %v", got, err)
	}
	worker := c.byName(rep.Node)
	noValueOnDisk := func(when string) {
		t.Helper()
		files := 0
		for _, dir := range []string{worker.dir, m.dir, c.ctrd.Dir()} {
			p, n := findBytes(t, dir, []byte(value))
			if p != "" {
				t.Fatalf("%s: the secret's value is on disk in %s", when, p)
			}
			files += n
		}
		t.Logf("%s: the value is in none of %d files under the data dirs and containerd's root", when, files)
		if files < 10 {
			t.Fatalf("%s: only %d files searched; the search looked nowhere", when, files)
		}
	}
	noValueOnDisk("while the replica runs")
	wantError(t, m.jaco("secret", "rm", "db_pass"), 1, "secret_in_use")

	wantOK(t, m.jaco("service", "rm", "app"))
	c.waitGone(t, rep.Node, []string{rep.ID})
	noValueOnDisk("after the replica is removed")
	eventually(t, 30*time.Second, func() error { return m.jaco("secret", "rm", "db_pass").err() })
	wantOK(t, m.jaco("config", "rm", "app_conf"))
}

// findBytes returns the first regular file under dir holding b, and how
// many files it read, through the file system as it is mounted (tmpfs
// mounts hold memory, not disk: those are skipped).
func findBytes(t testing.TB, dir string, b []byte) (string, int) {
	t.Helper()
	tmpfs := tmpfsMounts(t)
	var found string
	read := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				return nil
			}
			return err
		}
		if tmpfs[path] { // a tmpfs mount (or a file bound from one): memory
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		read++
		if err == nil && bytes.Contains(data, b) {
			found = path
			return filepath.SkipAll
		}
		return nil
	})
	if err != nil {
		t.Fatalf("search %s: %v", dir, err)
	}
	return found, read
}

// tmpfsMounts are the mount points of tmpfs file systems.
func tmpfsMounts(t testing.TB) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(l, " - ")
		f := strings.Fields(pre)
		if !ok || len(f) < 5 || !strings.HasPrefix(post, "tmpfs ") {
			continue
		}
		out[f[4]] = true
	}
	return out
}
