package hooks

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/agent/volumes"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/testenv"
)

// hostTarget makes an empty directory on the node for a mount target,
// under /srv as an operator would (the temporary directory otherwise),
// open to every user as such a directory is.
func hostTarget(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "mount namespaces need root")
	}
	base := "/srv"
	if st, err := os.Stat(base); err != nil || !st.IsDir() {
		base = os.TempDir()
	}
	dir, err := os.MkdirTemp(base, "jaco-test-vol-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// hostMounts are the lines of the node's mount table (this process's
// namespace, the host's) that name one of paths.
func hostMounts(t *testing.T, paths ...string) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for line := range strings.SplitSeq(string(data), "\n") {
		for _, p := range paths {
			if strings.Contains(line, " "+p+" ") || strings.Contains(line, " "+p+"/") {
				lines = append(lines, line)
			}
		}
	}
	return lines
}

// gated is a launch that prints the mount table lines of $T, writes what
// $WRITE says, and runs until $GATE exists.
const gated = `#!/bin/sh
grep " $T " /proc/self/mounts | sed 's/^/mount: /'
[ -n "$WRITE" ] && sh -c "$WRITE"
echo ready
while [ ! -e "$GATE" ]; do sleep 0.05; done
echo leaving
`

func openGate(t *testing.T, gate string) {
	t.Helper()
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func removeReplica(t *testing.T, c exec.Controller) {
	t.Helper()
	if err := c.Remove(testContext(t)); err != nil {
		t.Fatalf("Remove: %v", err)
	}
}

// A named volume at a target: prepare and launch write through the
// target into the node's volume directory, the node's own directory at
// the target is left as it was, the node's mount table never shows the
// mount, and a later replica of the volume finds what the first wrote.
func TestNamedVolumeAtTarget(t *testing.T) {
	target := hostTarget(t)
	volDir := filepath.Join(t.TempDir(), "volumes")
	rt := newRuntime(t, WithVolumesDir(volDir))
	gate := filepath.Join(t.TempDir(), "gate")
	spec := func(s *api.ServiceSpec) {
		s.Env = []string{"T=" + target, "GATE=" + gate, "WRITE=echo from-launch > $T/l"}
		s.Mounts = []*api.Mount{{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "db", VolumeId: "vol1", Target: target}}
	}
	first := newReplica(t, map[string]string{
		"prepare": "#!/bin/sh\necho from-prepare > \"$T/p\"\n",
		"launch":  gated,
	}, spec)
	c := controllerFor(t, rt, first)
	prepareAndStart(t, c)
	waitLog(t, first, "ready")
	if !strings.Contains(readLog(t, first), "mount: ") {
		t.Errorf("launch saw no mount at %s:\n%s", target, readLog(t, first))
	}
	if lines := hostMounts(t, target); len(lines) > 0 {
		t.Errorf("the node's mount table shows the replica's mount: %q", lines)
	}
	data := volumes.Dir(volDir).Path("db")
	for name, want := range map[string]string{"p": "from-prepare\n", "l": "from-launch\n"} {
		if b, err := os.ReadFile(filepath.Join(data, name)); err != nil || string(b) != want {
			t.Errorf("volume's %s: %q, %v; want %q", name, b, err, want)
		}
		if fileExists(filepath.Join(target, name)) {
			t.Errorf("%s/%s exists on the node: the write went past the volume", target, name)
		}
	}
	openGate(t, gate)
	if exit := waitExit(t, c); exit.Code != 0 {
		t.Fatalf("exit = %+v\n%s", exit, readLog(t, first))
	}
	removeReplica(t, c)
	if !fileExists(filepath.Join(data, "l")) {
		t.Fatalf("the volume's data went with the replica")
	}

	second := newReplica(t, map[string]string{"launch": "#!/bin/sh\necho \"saw $(cat \"$T/l\") $(cat \"$T/p\")\"\n"}, spec)
	second.Task.Id = "replica-2"
	c2 := controllerFor(t, rt, second)
	prepareAndStart(t, c2)
	if exit := waitExit(t, c2); exit.Code != 0 {
		t.Fatalf("second exit = %+v\n%s", exit, readLog(t, second))
	}
	if log := readLog(t, second); !strings.Contains(log, "saw from-launch from-prepare") {
		t.Fatalf("second replica did not see the first's files:\n%s", log)
	}
	removeReplica(t, c2)
}

// A tmpfs at a target is a tmpfs of the spec's size and mode in launch's
// mount table; an Exec command, also from a runtime made after jacod
// restarted, runs in the same namespace and sees what launch wrote
// there; the node never sees it.
func TestTmpfsMountSharedWithExec(t *testing.T) {
	target := hostTarget(t)
	gate := filepath.Join(t.TempDir(), "gate")
	rep := newReplica(t, map[string]string{"launch": gated}, func(s *api.ServiceSpec) {
		s.Env = []string{"T=" + target, "GATE=" + gate, "WRITE=echo hi > $T/marker"}
		s.Mounts = []*api.Mount{{Type: api.MountType_MOUNT_TYPE_TMPFS, Target: target, TmpfsSizeBytes: 1 << 20, TmpfsMode: 0o1770}}
	})
	c := controllerFor(t, newRuntime(t), rep)
	prepareAndStart(t, c)
	waitLog(t, rep, "ready")
	log := readLog(t, rep)
	if !strings.Contains(log, "mount: tmpfs "+target+" tmpfs ") || !strings.Contains(log, "size=1024k") || !strings.Contains(log, "mode=1770") {
		t.Errorf("launch's mount table lacks a 1 MiB tmpfs of mode 1770 at %s:\n%s", target, log)
	}
	if lines := hostMounts(t, target); len(lines) > 0 {
		t.Errorf("the node's mount table shows the replica's tmpfs: %q", lines)
	}
	if fileExists(filepath.Join(target, "marker")) {
		t.Errorf("launch's write reached the node's %s", target)
	}
	for name, ctl := range map[string]exec.Controller{"same": c, "after restart": controllerFor(t, newRuntime(t), rep)} {
		code, err := ctl.Exec(testContext(t), []string{"/bin/sh", "-c", `test "$(cat "$T/marker")" = hi`})
		if err != nil || code != 0 {
			t.Errorf("Exec (%s controller) in the replica's tmpfs: code %d, %v; want 0", name, code, err)
		}
	}
	openGate(t, gate)
	if exit := waitExit(t, c); exit.Code != 0 {
		t.Fatalf("exit = %+v\n%s", exit, readLog(t, rep))
	}
	removeReplica(t, c)
}

// A read-only bind refuses a write; a writable one whose missing source
// asks create_host_path gets it made and written through.
func TestBindMounts(t *testing.T) {
	roTarget, rwTarget := hostTarget(t), hostTarget(t)
	roSource := t.TempDir()
	if err := os.WriteFile(filepath.Join(roSource, "f"), []byte("node-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rwSource := filepath.Join(t.TempDir(), "made", "here")
	launch := `#!/bin/sh
cat "$RO/f"
if echo x > "$RO/new" 2>/dev/null; then echo "ro: wrote"; else echo "ro: refused"; fi
echo rw > "$RW/f" && echo "rw: wrote"
`
	rep := newReplica(t, map[string]string{"launch": launch}, func(s *api.ServiceSpec) {
		s.Env = []string{"RO=" + roTarget, "RW=" + rwTarget}
		s.Mounts = []*api.Mount{
			{Source: roSource, Target: roTarget, Readonly: true},
			{Type: api.MountType_MOUNT_TYPE_BIND, Source: rwSource, Target: rwTarget, CreateHostPath: true},
		}
	})
	c := controllerFor(t, newRuntime(t), rep)
	prepareAndStart(t, c)
	if exit := waitExit(t, c); exit.Code != 0 {
		t.Fatalf("exit = %+v\n%s", exit, readLog(t, rep))
	}
	log := readLog(t, rep)
	for _, want := range []string{"node-file", "ro: refused", "rw: wrote"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if fileExists(filepath.Join(roSource, "new")) {
		t.Errorf("a write went through the read-only bind")
	}
	if b, err := os.ReadFile(filepath.Join(rwSource, "f")); err != nil || string(b) != "rw\n" {
		t.Errorf("created host path's f: %q, %v", b, err)
	}
	removeReplica(t, c)
}

// An anonymous volume is a directory of the replica's, given to its user
// and gone with it; a named volume made for a replica with a user is
// that user's, while one already in use keeps its owner.
func TestVolumesOwnershipAndAnonymousRemoval(t *testing.T) {
	anonTarget, newTarget, oldTarget := hostTarget(t), hostTarget(t), hostTarget(t)
	volDir := filepath.Join(t.TempDir(), "volumes")
	if _, err := volumes.Dir(volDir).Source("old", "vol-old", nil); err != nil {
		t.Fatal(err)
	}
	launch := `#!/bin/sh
for d in "$A" "$N" "$O"; do
	if echo x > "$d/f" 2>/dev/null; then echo "$d: wrote"; else echo "$d: refused"; fi
done
`
	rep := newReplica(t, map[string]string{"launch": launch}, func(s *api.ServiceSpec) {
		s.User = "nobody"
		s.Env = []string{"A=" + anonTarget, "N=" + newTarget, "O=" + oldTarget}
		s.Mounts = []*api.Mount{
			{Type: api.MountType_MOUNT_TYPE_VOLUME, Target: anonTarget},
			{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "new", VolumeId: "vol-new", Target: newTarget},
			{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "old", VolumeId: "vol-old", Target: oldTarget},
		}
	})
	c := controllerFor(t, newRuntime(t, WithVolumesDir(volDir)), rep)
	prepareAndStart(t, c)
	if exit := waitExit(t, c); exit.Code != 0 {
		t.Fatalf("exit = %+v\n%s", exit, readLog(t, rep))
	}
	log := readLog(t, rep)
	for _, want := range []string{anonTarget + ": wrote", newTarget + ": wrote", oldTarget + ": refused"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	owner := func(path string) uint32 {
		var st syscall.Stat_t
		if err := syscall.Stat(path, &st); err != nil {
			t.Fatal(err)
		}
		return st.Uid
	}
	if uid := owner(volumes.Dir(volDir).Path("new")); uid != nobodyUID {
		t.Errorf("new volume's owner: uid %d, want %d", uid, nobodyUID)
	}
	if uid := owner(volumes.Dir(volDir).Path("old")); uid != 0 {
		t.Errorf("volume in use before: owner changed to uid %d", uid)
	}
	anon, _ := filepath.Glob(filepath.Join(rep.Dir, "volumes", "*", "_data", "f"))
	if len(anon) != 1 {
		t.Fatalf("anonymous volume's file in the replica's dir: %v; want one", anon)
	}
	removeReplica(t, c)
	if _, err := os.Stat(filepath.Join(rep.Dir, "volumes")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("anonymous volumes after Remove: %v; want them gone", err)
	}
	if !fileExists(filepath.Join(volumes.Dir(volDir).Path("new"), "f")) {
		t.Errorf("a named volume's data went with the replica")
	}
}

// What cannot be mounted fails Prepare, naming it, before anything is
// made: a target the node lacks, one hiding the replica's own directory,
// a named volume on a runtime without a volumes dir.
func TestMountsRefusedByPrepare(t *testing.T) {
	target := hostTarget(t)
	for _, tc := range []struct {
		name  string
		mount func(rep exec.Replica) *api.Mount
		want  string
	}{
		{"missing target", func(exec.Replica) *api.Mount {
			return &api.Mount{Type: api.MountType_MOUNT_TYPE_TMPFS, Target: filepath.Join(target, "nope")}
		}, "does not exist on this node"},
		{"hides the replica", func(rep exec.Replica) *api.Mount {
			return &api.Mount{Type: api.MountType_MOUNT_TYPE_TMPFS, Target: filepath.Dir(rep.Dir)}
		}, "would hide"},
		{"hides the replica through a symlink", func(rep exec.Replica) *api.Mount {
			link := filepath.Join(target, "link")
			if err := os.Symlink(filepath.Dir(rep.Dir), link); err != nil {
				t.Fatal(err)
			}
			return &api.Mount{Type: api.MountType_MOUNT_TYPE_TMPFS, Target: link}
		}, "would hide"},
		{"a file target for a directory", func(exec.Replica) *api.Mount {
			file := filepath.Join(target, "file")
			if err := os.WriteFile(file, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			return &api.Mount{Type: api.MountType_MOUNT_TYPE_TMPFS, Target: file}
		}, "want a directory"},
		{"no volumes dir", func(exec.Replica) *api.Mount {
			return &api.Mount{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "db", Target: target}
		}, "no volumes dir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := newReplica(t, map[string]string{"launch": "#!/bin/sh\n"}, nil)
			rep.Task.Spec.Mounts = []*api.Mount{tc.mount(rep)}
			err := controllerFor(t, newRuntime(t), rep).Prepare(testContext(t))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Prepare = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

// A replica on a network with a mount: launch and Exec see both its
// resolv.conf and its tmpfs, in one namespace.
func TestMountsOnNetwork(t *testing.T) {
	env := newNetEnv(t)
	target := hostTarget(t)
	gate := filepath.Join(t.TempDir(), "gate")
	rep := newReplica(t, map[string]string{"launch": gated}, func(s *api.ServiceSpec) {
		s.Networks = []string{"back"}
		s.Env = []string{"T=" + target, "GATE=" + gate, "WRITE=echo hi > $T/marker"}
		s.Mounts = []*api.Mount{{Type: api.MountType_MOUNT_TYPE_TMPFS, Target: target}}
	})
	c := controllerFor(t, env.runtime(t), rep)
	prepareAndStart(t, c)
	waitLog(t, rep, "ready")
	if log := readLog(t, rep); !strings.Contains(log, "mount: tmpfs "+target+" tmpfs ") {
		t.Errorf("launch saw no tmpfs at %s:\n%s", target, log)
	}
	checkExecInSandbox(t, c, env.att)
	if code, err := c.Exec(testContext(t), []string{"/bin/sh", "-c", `test "$(cat "$T/marker")" = hi`}); err != nil || code != 0 {
		t.Errorf("Exec in the replica's tmpfs: code %d, %v; want 0", code, err)
	}
	openGate(t, gate)
	if exit := waitExit(t, c); exit.Code != 0 {
		t.Fatalf("exit = %+v\n%s", exit, readLog(t, rep))
	}
	removeReplica(t, c)
}

// A target inside another mount is made in that mount when missing,
// never on the node: here in the anonymous volume below it.
func TestNestedTargetMadeInsideMount(t *testing.T) {
	target := hostTarget(t)
	sub := filepath.Join(target, "cache", "tmp")
	rep := newReplica(t, map[string]string{"launch": "#!/bin/sh\ngrep \" $SUB \" /proc/self/mounts | sed 's/^/mount: /'\n"}, func(s *api.ServiceSpec) {
		s.Env = []string{"SUB=" + sub}
		// Listed child first: the parent is mounted first all the same.
		s.Mounts = []*api.Mount{
			{Type: api.MountType_MOUNT_TYPE_TMPFS, Target: sub},
			{Type: api.MountType_MOUNT_TYPE_VOLUME, Target: target},
		}
	})
	c := controllerFor(t, newRuntime(t), rep)
	prepareAndStart(t, c)
	if exit := waitExit(t, c); exit.Code != 0 {
		t.Fatalf("exit = %+v\n%s", exit, readLog(t, rep))
	}
	if log := readLog(t, rep); !strings.Contains(log, "mount: tmpfs "+sub+" tmpfs ") {
		t.Errorf("launch saw no tmpfs at %s:\n%s", sub, log)
	}
	if fileExists(filepath.Join(target, "cache")) {
		t.Errorf("the nested target was made on the node, below %s", target)
	}
	if made, _ := filepath.Glob(filepath.Join(rep.Dir, "volumes", "*", "_data", "cache", "tmp")); len(made) != 1 {
		t.Errorf("nested target in the anonymous volume: %v; want it made there", made)
	}
	removeReplica(t, c)
}
