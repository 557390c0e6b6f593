package hooks

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/containerdtest"
)

// withFiles gives rep the content of its spec's secrets and configs, as
// the agent does, and unmounts what a failed test leaves in its dir.
func withFiles(t *testing.T, rep exec.Replica, secrets, configs map[string]string) exec.Replica {
	t.Helper()
	lookup := func(m map[string]string) exec.FileLookup {
		return func(ref *api.FileReference) (*api.FileSpec, bool) {
			v, ok := m[ref.GetName()]
			return &api.FileSpec{Name: ref.GetName(), Data: []byte(v)}, ok
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

func mountedAt(t *testing.T, dir string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(b, []byte(" "+dir+" "))
}

// prepare, launch and cleanup read the secret in $JACO_SECRETS_DIR and
// the config in $JACO_CONFIGS_DIR (at its target), launch also in the
// mount namespace of a replica on a network; the secret has its mode and
// owner; after Remove the tmpfs is unmounted and the value is nowhere in
// the replica's dir.
func TestHooksReadSecretsAndConfigs(t *testing.T) {
	t.Run("host", func(t *testing.T) { testHooksReadFiles(t, newRuntime(t), nil) })
	t.Run("network", func(t *testing.T) { testHooksReadFiles(t, newNetEnv(t).runtime(t), []string{"back"}) })
}

func testHooksReadFiles(t *testing.T, rt *Runtime, networks []string) {
	const value = "hook-secret-7f3a9c"
	launch := `#!/bin/sh
echo "launch secret=$(cat "$JACO_SECRETS_DIR/api_token" | tr a-z A-Z)"
stat -c 'mode %a %u %g' "$JACO_SECRETS_DIR/api_token"
echo "launch config=$(cat "$JACO_CONFIGS_DIR/etc/app.conf")"
`
	prepare := "#!/bin/sh\ntest -r \"$JACO_SECRETS_DIR/api_token\" && echo prepare-sees-secret\n"
	cleanup := "#!/bin/sh\ntest -r \"$JACO_SECRETS_DIR/api_token\" && echo cleanup-sees-secret\n"
	rep := newReplica(t, map[string]string{"launch": launch, "prepare": prepare, "cleanup": cleanup}, func(s *api.ServiceSpec) {
		s.Secrets = []*api.FileReference{{Name: "api_token", Uid: 1000, Gid: 1000}}
		s.Configs = []*api.FileReference{{Name: "app", Target: "/etc/app.conf"}}
		s.Networks = networks
	})
	rep = withFiles(t, rep, map[string]string{"api_token": value}, map[string]string{"app": "level=debug"})
	c := controllerFor(t, rt, rep)
	prepareAndStart(t, c)
	if exit := waitExit(t, c); exit.Code != 0 {
		t.Fatalf("exit = %+v, want code 0", exit)
	}
	for _, want := range []string{"prepare-sees-secret", "launch secret=" + strings.ToUpper(value), "mode 444 1000 1000", "launch config=level=debug"} {
		waitLog(t, rep, want)
	}
	if !mountedAt(t, rep.FilesDir()) {
		t.Fatalf("no tmpfs at %s", rep.FilesDir())
	}
	if err := c.Remove(testContext(t)); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	waitLog(t, rep, "cleanup-sees-secret")
	if mountedAt(t, rep.FilesDir()) {
		t.Errorf("tmpfs still mounted at %s after Remove", rep.FilesDir())
	}
	err := filepath.WalkDir(filepath.Dir(rep.Dir), func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(value)) {
			t.Errorf("the secret's value is in %s after Remove", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A replica whose secret did not arrive fails to prepare, naming it; its
// env has no JACO_CONFIGS_DIR without configs; the tmpfs a failed prepare
// made is gone.
func TestHooksPrepareFilesFailures(t *testing.T) {
	rep := newReplica(t, map[string]string{"launch": "#!/bin/sh\n"}, func(s *api.ServiceSpec) {
		s.Secrets = []*api.FileReference{{Name: "absent"}}
	})
	c := controllerFor(t, newRuntime(t), withFiles(t, rep, nil, nil))
	var missing *exec.MissingFileError
	if err := c.Prepare(testContext(t)); !errors.As(err, &missing) || missing.Name != "absent" {
		t.Fatalf("Prepare = %v, want secret absent missing", err)
	}

	rep = newReplica(t, map[string]string{"launch": "#!/bin/sh\n", "prepare": "#!/bin/sh\nenv; exit 3\n"}, func(s *api.ServiceSpec) {
		s.Secrets = []*api.FileReference{{Name: "s"}}
		s.Bundle.PrepareStartLimit = 1
	})
	rep = withFiles(t, rep, map[string]string{"s": "v"}, nil)
	c = controllerFor(t, newRuntime(t), rep)
	if err := c.Prepare(testContext(t)); err == nil {
		t.Fatal("Prepare succeeded with a failing prepare hook")
	}
	log := readLog(t, rep)
	if !strings.Contains(log, exec.EnvSecretsDir+"="+rep.SecretsHostDir()) || strings.Contains(log, exec.EnvConfigsDir) {
		t.Errorf("prepare's env: want %s and no %s:\n%s", exec.EnvSecretsDir, exec.EnvConfigsDir, log)
	}
	if mountedAt(t, rep.FilesDir()) {
		t.Errorf("tmpfs left mounted by a failed Prepare")
	}
	if _, err := os.Stat(rep.FilesDir()); !os.IsNotExist(err) {
		t.Errorf("files dir after a failed Prepare: %v", err)
	}
}
