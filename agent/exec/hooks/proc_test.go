package hooks

import (
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/testenv"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// nobody is Debian's unprivileged user and its group (nogroup); daemon's
// group is gid 1.
const (
	nobodyUID = 65534
	daemonGID = 1
)

// openDir makes a directory any user may enter, outside the test's own
// 0700 temporary directory.
func openDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "jaco-workdir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// sayProc is a shell line printing who a hook runs as, where, and with
// which nofile limits.
const sayProc = `echo "$0: uid=$(id -u) groups=$(id -G) cwd=$(pwd) nofile=$(ulimit -Sn):$(ulimit -Hn)"`

// launch, finish and Exec commands run as the spec's user with its
// groups, in its workdir and with its ulimits, and the user reaches its
// secret and notify socket in the replica's 0700 directory; prepare runs
// as root in the bundle.
func TestProcessOptionsApplyToLaunchFinishAndExec(t *testing.T) {
	if _, err := osexec.LookPath("id"); err != nil {
		testenv.SkipOrFail(t, "id(1) missing: %v", err)
	}
	wd := openDir(t)
	rep := newReplica(t, map[string]string{
		"prepare": "#!/bin/sh\n" + sayProc + "\n",
		"launch":  "#!/bin/sh\n" + sayProc + "\necho \"secret=$(cat \"$JACO_SECRETS_DIR/token\")\"\nexit 0\n",
		"finish":  "#!/bin/sh\n" + sayProc + "\n",
	}, func(s *api.ServiceSpec) {
		s.User = "nobody"
		s.Groups = []string{"daemon", "4242"}
		s.Workdir = wd
		s.Ulimits = []*api.Ulimit{{Name: "nofile", Soft: 1000, Hard: 2000}}
		s.Secrets = []*api.FileReference{{Name: "token", Uid: nobodyUID, Mode: 0o400}}
		s.Health = &api.HealthCheck{Test: &api.HealthCheck_Notify{Notify: &api.NotifyCheck{}}}
	})
	rep = withFiles(t, rep, map[string]string{"token": "s3cret"}, nil)
	c := controllerFor(t, newRuntime(t), rep)
	prepareAndStart(t, c)
	if exit := waitExit(t, c); exit.Code != 0 {
		t.Fatalf("exit = %+v, want code 0\n%s", exit, readLog(t, rep))
	}
	as := fmt.Sprintf("uid=%d groups=%d %d 4242 cwd=%s nofile=1000:2000", nobodyUID, nobodyUID, daemonGID, wd)
	log := readLog(t, rep)
	for _, want := range []string{
		filepath.Join(rep.Dir, "bundle", "launch") + ": " + as,
		"secret=s3cret",
		filepath.Join(rep.Dir, "bundle", "finish") + ": " + as,
		filepath.Join(rep.Dir, "bundle", "prepare") + ": uid=0 ",
		"cwd=" + filepath.Join(rep.Dir, "bundle"), // prepare's
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}

	ctx := testContext(t)
	check := fmt.Sprintf(`[ "$(id -u) $(id -G) $(pwd) $(ulimit -Sn):$(ulimit -Hn)" = "%d %d %d 4242 %s 1000:2000" ] && exit 5; exit 1`,
		nobodyUID, nobodyUID, daemonGID, wd)
	if code, err := c.Exec(ctx, []string{"sh", "-c", check}); err != nil || code != 5 {
		t.Errorf("Exec = %d, %v; want 5 (user, groups, workdir and limits of the spec)", code, err)
	}

	// The notify socket is the user's to send to: a sender running as
	// nobody (this test binary, see TestMain) makes the replica ready.
	notes, err := c.(exec.Notifier).Notifications(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sender := osexec.Command("/proc/self/exe", "READY=1")
	sender.Env = []string{testNotifyEnv + "=1", "GORACE=atexit_sleep_ms=0", exec.EnvSystemdNotifySocket + "=" + filepath.Join(rep.Dir, notifySocketFile)}
	sender.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyUID, Gid: nobodyUID}}
	if out, err := sender.CombinedOutput(); err != nil {
		t.Fatalf("notify as nobody: %v: %s", err, out)
	}
	select {
	case n := <-notes:
		if !n.Ready {
			t.Fatalf("notification %+v, want READY=1", n)
		}
	case <-ctx.Done():
		t.Fatal("READY=1 sent as nobody never arrived")
	}
	if err := c.Remove(ctx); err != nil {
		t.Fatalf("Remove: %v", err)
	}
}

// stopLaunch notes which signal it got, and ends on any of them.
const stopLaunch = `#!/bin/sh
for s in INT QUIT TERM USR1 HUP; do trap "echo got $s; exit 0" $s; done
echo ready
while :; do sleep 0.05; done
`

// The first rung of Stop is the spec's stop_signal, through the shim (it
// must not take SIGTERM for "kill", nor die of SIGUSR1), from a later
// jacod (which reads the signal launch was started with, whatever its
// spec says), and straight to launch when the shim was killed.
func TestStopSignal(t *testing.T) {
	for _, tc := range []struct {
		name, signal, want string
		before             func(t *testing.T, rep exec.Replica) exec.Controller
	}{
		{name: "TERM", signal: "TERM", want: "got TERM"},
		{name: "USR1", signal: "SIGUSR1", want: "got USR1"},
		{name: "unset", want: "got INT"},
		{name: "agent restarted", signal: "15", want: "got TERM", before: restarted},
		{name: "shim killed", signal: "TERM", want: "got TERM", before: func(t *testing.T, rep exec.Replica) exec.Controller {
			killShim(t, rep)
			return nil
		}},
		{name: "agent restarted, shim killed", signal: "TERM", want: "got TERM", before: func(t *testing.T, rep exec.Replica) exec.Controller {
			killShim(t, rep)
			return restarted(t, rep)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := newReplica(t, map[string]string{"launch": stopLaunch}, func(s *api.ServiceSpec) {
				s.StopSignal = tc.signal
				// Long enough that a wrong first signal shows as SIGQUIT's
				// "got QUIT" or no note at all, short enough to fail fast.
				s.StopGracePeriod = durationpb.New(5 * time.Second)
			})
			c := controllerFor(t, newRuntime(t), rep)
			prepareAndStart(t, c)
			waitLog(t, rep, "ready")
			if tc.before != nil {
				if other := tc.before(t, rep); other != nil {
					c = other
				}
			}
			if err := c.Stop(testContext(t)); err != nil {
				t.Fatalf("Stop: %v\n%s", err, readLog(t, rep))
			}
			waitfor.Eventually(t, 10*time.Second, func() error {
				if log := readLog(t, rep); strings.Count(log, "got ") != 1 || !strings.Contains(log, tc.want) {
					return fmt.Errorf("want exactly %q noted:\n%s", tc.want, log)
				}
				return nil
			})
		})
	}
}

// A spec naming what the node lacks, or a workdir that is not absolute,
// fails Prepare with what is wrong; a workdir gone by Start fails Start.
func TestProcessOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*api.ServiceSpec)
		want string
	}{
		{"relative workdir", func(s *api.ServiceSpec) { s.Workdir = "srv/app" }, `workdir "srv/app": want an absolute path`},
		{"missing workdir", func(s *api.ServiceSpec) { s.Workdir = "/nonexistent-jaco-workdir" }, "workdir /nonexistent-jaco-workdir does not exist on this node"},
		{"workdir is a file", func(s *api.ServiceSpec) { s.Workdir = "/etc/passwd" }, "workdir /etc/passwd is not a directory"},
		{"unknown user", func(s *api.ServiceSpec) { s.User = "no-such-user-jaco" }, "user no-such-user-jaco"},
		{"unknown uid without group", func(s *api.ServiceSpec) { s.User = "4321" }, "user 4321: no such user on this node, so no primary group to take"},
		{"unknown group", func(s *api.ServiceSpec) { s.User = "nobody:no-such-group-jaco" }, "group no-such-group-jaco"},
		{"unknown supplementary group", func(s *api.ServiceSpec) { s.Groups = []string{"no-such-group-jaco"} }, "groups: group no-such-group-jaco"},
		{"bad ulimit", func(s *api.ServiceSpec) { s.Ulimits = []*api.Ulimit{{Name: "nofile", Soft: 10, Hard: 5}} }, "soft limit 10 above the hard limit 5"},
		{"bad stop signal", func(s *api.ServiceSpec) { s.StopSignal = "SIGNOPE" }, "stop_signal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mark := filepath.Join(t.TempDir(), "prepared")
			rep := newReplica(t, map[string]string{"launch": "#!/bin/sh\n", "prepare": "#!/bin/sh\ntouch \"$MARK\"\n"}, func(s *api.ServiceSpec) {
				s.Env = []string{"MARK=" + mark}
				tc.edit(s)
			})
			err := controllerFor(t, newRuntime(t), rep).Prepare(testContext(t))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Prepare = %v, want an error saying %q", err, tc.want)
			}
			if fileExists(mark) {
				t.Error("prepare ran for a spec the node cannot run")
			}
		})
	}
	t.Run("workdir gone by Start", func(t *testing.T) {
		wd := openDir(t)
		rep := newReplica(t, map[string]string{"launch": "#!/bin/sh\n"}, func(s *api.ServiceSpec) { s.Workdir = wd })
		c := controllerFor(t, newRuntime(t), rep)
		if err := c.Prepare(testContext(t)); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(wd); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(testContext(t)); err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("Start = %v, want the missing workdir", err)
		}
	})
}

func TestResolveCredential(t *testing.T) {
	for _, tc := range []struct {
		user   string
		groups []string
		want   *credential
	}{
		{"", nil, nil},
		{"nobody", nil, &credential{UID: nobodyUID, GID: nobodyUID, Groups: []uint32{}}},
		{"65534", nil, &credential{UID: nobodyUID, GID: nobodyUID, Groups: []uint32{}}},
		{"nobody:daemon", []string{"4242", "daemon"}, &credential{UID: nobodyUID, GID: daemonGID, Groups: []uint32{4242, daemonGID}}},
		{"4321:4322", nil, &credential{UID: 4321, GID: 4322, Groups: []uint32{}}},
		{"", []string{"daemon"}, &credential{UID: 0, GID: 0, Groups: []uint32{daemonGID}}},
	} {
		got, err := resolveCredential(tc.user, tc.groups)
		if err != nil {
			t.Errorf("resolveCredential(%q, %q): %v", tc.user, tc.groups, err)
			continue
		}
		if (got == nil) != (tc.want == nil) || got != nil && (got.UID != tc.want.UID || got.GID != tc.want.GID || !slices.Equal(got.Groups, tc.want.Groups)) {
			t.Errorf("resolveCredential(%q, %q) = %+v, want %+v", tc.user, tc.groups, got, tc.want)
		}
	}
}

// grantSearch lets the one user through directories it could not search,
// and leaves alone those it could.
func TestGrantSearch(t *testing.T) {
	root := t.TempDir() // 0700
	open := filepath.Join(root, "open")
	closed := filepath.Join(open, "closed")
	if err := os.MkdirAll(closed, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	enter := func(uid uint32) error {
		cmd := osexec.Command("/bin/sh", "-c", "cd \"$1\"", "sh", closed)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	}
	if enter(nobodyUID) == nil {
		t.Fatal("nobody enters a 0700 directory before any grant")
	}
	cred := &credential{UID: nobodyUID, GID: nobodyUID}
	for range 2 { // again changes nothing
		if err := grantSearch(closed, cred); err != nil {
			t.Fatal(err)
		}
	}
	if err := enter(nobodyUID); err != nil {
		t.Fatalf("nobody cannot enter after the grant: %v", err)
	}
	if enter(4321) == nil {
		t.Error("another user enters too")
	}
	if _, err := unix.Getxattr(open, aclXattr, nil); !errors.Is(err, unix.ENODATA) {
		t.Errorf("a directory nobody could search got an ACL: %v", err)
	}
	acl, err := readACL(closed, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(acl, aclEntry{tag: aclUser, perm: aclSearch, id: nobodyUID}) {
		t.Errorf("ACL of %s = %+v, want u:%d:--x", closed, acl, nobodyUID)
	}
	if _, err := os.ReadDir(closed); err != nil { // root still lists it
		t.Fatal(err)
	}
}

// restarted is the controller of a later jacod for rep, whose spec says
// nothing of a stop signal: the launch spec must.
func restarted(t *testing.T, rep exec.Replica) exec.Controller {
	rep.Task = proto.Clone(rep.Task).(*api.Task)
	rep.Task.Spec.StopSignal = ""
	return controllerFor(t, newRuntime(t), rep)
}

// killShim kills the replica's shim outright, leaving launch running.
func killShim(t *testing.T, rep exec.Replica) {
	t.Helper()
	shim, _, err := readProc(filepath.Join(rep.Dir, shimFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(shim.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitfor.Eventually(t, 10*time.Second, func() error {
		if shim.alive() {
			return fmt.Errorf("shim %d alive", shim.Pid)
		}
		return nil
	})
}
