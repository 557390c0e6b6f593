package containerd

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/containerdtest"
)

// withFiles gives rep its spec's secrets and configs with content, as
// the agent does, and unmounts what a failed test leaves in its dir.
func withFiles(t *testing.T, rep exec.Replica, secrets, configs map[string][]byte) exec.Replica {
	t.Helper()
	lookup := func(m map[string][]byte) exec.FileLookup {
		return func(ref *api.FileReference) (*api.FileSpec, bool) {
			v, ok := m[ref.GetName()]
			return &api.FileSpec{Name: ref.GetName(), Data: v}, ok
		}
	}
	files, err := exec.ResolveFiles(rep.Task.GetSpec(), lookup(secrets), lookup(configs))
	if err != nil {
		t.Fatal(err)
	}
	rep.Files = files
	t.Cleanup(func() { _ = containerdtest.UnmountUnder(rep.Dir) })
	return rep
}

// findBytes lists the regular files under dir holding b.
func findBytes(t *testing.T, dir string, b []byte) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				return nil // gone while walking (a shim's fifo)
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		if bytes.Contains(data, b) {
			found = append(found, p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	return found
}

func mounted(t *testing.T, dir string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(b, []byte(" "+dir+" "))
}

// A container sees its secret at /run/secrets/NAME (content, mode 0444
// and owner) and its config at its target, both read-only, also when the
// tmpfs went away between an agent's Prepare and the next agent's; after
// Remove the tmpfs is unmounted and the secret is nowhere under the
// replica's dir, the runtime's state, containerd's root and state, or
// the replica's log.
func TestSecretsAndConfigsInTheContainer(t *testing.T) {
	d := containerdtest.Start(t)
	n := newNode(t, d, "node-secrets")
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	secret := []byte("s3cret-" + hex.EncodeToString(raw[:]))
	sum := md5.Sum(secret)
	rep := replica(t, n.id, "task-secret-1", &api.ServiceSpec{
		Command: []string{"sh", "-c", `stat -c 'secret %a %u %g' /run/secrets/db_pass; md5sum /run/secrets/db_pass;
stat -c 'config %a' /etc/app/app.conf; cat /etc/app/app.conf;
echo x > /run/secrets/db_pass 2>/dev/null || echo secret-read-only; sleep 1`},
		Secrets: []*api.FileReference{{Name: "db_pass", Id: "sec-1", Uid: 1000, Gid: 1001}},
		Configs: []*api.FileReference{{Name: "app", Target: "/etc/app/app.conf"}},
	})
	rep = withFiles(t, rep, map[string][]byte{"db_pass": secret}, map[string][]byte{"app": []byte("config-line\n")})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first, err := n.rt.Controller(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Prepare(ctx); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	if !mounted(t, rep.FilesDir()) {
		t.Fatalf("no tmpfs at %s after Prepare", rep.FilesDir())
	}
	// The tmpfs is gone when the next agent comes (someone unmounted
	// it): its Prepare puts the files back.
	if err := unix.Unmount(rep.FilesDir(), 0); err != nil {
		t.Fatal(err)
	}
	c := start(t, n.open(t), rep)
	if e := wait(t, c); e.Code != 0 {
		t.Fatalf("exit %+v", e)
	}
	for _, want := range []string{"secret 444 1000 1001", hex.EncodeToString(sum[:]), "config 444", "config-line", "secret-read-only"} {
		waitLog(t, rep, want)
	}
	// The search finds the value where it is (the replica's tmpfs), so
	// finding nothing below means something.
	if found := findBytes(t, rep.Dir, secret); len(found) != 1 || found[0] != rep.HostPath(rep.Files[0]) {
		t.Fatalf("secret found at %v before Remove, want only in the tmpfs", found)
	}
	if err := c.Remove(ctx); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if mounted(t, rep.FilesDir()) {
		t.Errorf("tmpfs still mounted at %s after Remove", rep.FilesDir())
	}
	if _, err := os.Stat(rep.FilesDir()); !os.IsNotExist(err) {
		t.Errorf("%s after Remove: %v", rep.FilesDir(), err)
	}
	for _, dir := range []string{rep.Dir, n.stateDir, d.Dir(), filepath.Dir(rep.LogPath)} {
		if found := findBytes(t, dir, secret); len(found) > 0 {
			t.Errorf("the secret's value is on disk after Remove: %v", found)
		}
	}
}

// A replica whose secret did not reach the node fails to prepare, naming
// it, and leaves nothing mounted.
func TestPrepareRefusesMissingSecret(t *testing.T) {
	d := containerdtest.Start(t)
	n := newNode(t, d, "node-nosecret")
	rep := replica(t, n.id, "task-nosecret-1", &api.ServiceSpec{
		Command: []string{"true"},
		Secrets: []*api.FileReference{{Name: "here"}, {Name: "absent"}},
	})
	rep = withFiles(t, rep, map[string][]byte{"here": []byte("x")}, nil)
	c, err := n.rt.Controller(rep)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Prepare(context.Background())
	var missing *exec.MissingFileError
	if !errors.As(err, &missing) || missing.Name != "absent" || !strings.Contains(err.Error(), `secret "absent"`) {
		t.Fatalf("prepare = %v, want the secret absent named missing", err)
	}
	if _, err := os.Stat(rep.FilesDir()); !os.IsNotExist(err) {
		t.Errorf("files dir after a refused Prepare: %v", err)
	}
}

// With an entrypoint, the container runs it followed by the command (the
// image's command dropped); with a command only, the command replaces
// both.
func TestEntrypointAndCommand(t *testing.T) {
	d := containerdtest.Start(t)
	n := newNode(t, d, "node-entry")
	for i, tc := range []struct {
		entrypoint, command []string
		want                string
	}{
		{[]string{"sh", "-c", `echo "entry $0 $1"`}, []string{"first", "second"}, "entry first second"},
		{[]string{"echo", "entrypoint-only"}, nil, "entrypoint-only"},
		{nil, []string{"echo", "command-only"}, "command-only"},
	} {
		rep := replica(t, n.id, "task-entry-"+string(rune('a'+i)), &api.ServiceSpec{Entrypoint: tc.entrypoint, Command: tc.command})
		c := start(t, n.rt, rep)
		if e := wait(t, c); e.Code != 0 {
			t.Fatalf("%v %v: exit %+v", tc.entrypoint, tc.command, e)
		}
		waitLog(t, rep, tc.want)
	}
}
