package hooks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	agentexec "github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/durable"
)

// defaultPath is given to hooks unless the spec's env sets PATH; jacod's
// own environment is not passed on.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// validateBundle refuses a bundle that holds anything but hooks, or no
// launch (api.CheckHookFiles, as the control API does).
func validateBundle(files map[string][]byte) error {
	if err := api.CheckHookFiles(files); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidBundle, err)
	}
	return nil
}

// writeBundle writes files into dir with mode 0755, each atomically, so
// a launch already reading its old script keeps the old inode.
func writeBundle(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create bundle dir: %w", err)
	}
	for name, data := range files {
		if err := durable.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			return fmt.Errorf("write hook %s: %w", name, err)
		}
	}
	return nil
}

// hookEnv is the environment of every hook and Exec: a default PATH, the
// spec's env, then the JACO_ variables, those of the replica's files
// included (later entries win).
func (c *controller) hookEnv() []string {
	env := []string{defaultPath}
	env = append(env, c.rep.Task.GetSpec().GetEnv()...)
	return append(append(env, c.rep.Env()...), c.filesEnv()...)
}

func (c *controller) bundlePath() string { return filepath.Join(c.rep.Dir, bundleDir) }

func (c *controller) hookPath(name string) string { return filepath.Join(c.bundlePath(), name) }

func (c *controller) hasHook(name string) bool {
	_, ok := c.rep.Task.GetSpec().GetBundle().GetFiles()[name]
	return ok
}

// openLog opens LogPath for appending, creating it and its directory.
func openLog(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	return f, nil
}

// runCommand runs argv in its own process group with env in dir, in sb,
// as p says (h is the exec helper it may need), output appended to log
// (discarded when nil), and returns its exit code (128+signal when a
// signal ended it). When ctx ends the whole group is killed. err is set
// only when the command could not run or ctx ended.
func runCommand(ctx context.Context, argv, env []string, dir string, log *os.File, sb sandbox, p proc, h execHelper) (int, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = dir
	if log != nil {
		cmd.Stdout, cmd.Stderr = log, log
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := p.start(cmd, h, sb.start)
	if err == nil {
		err = cmd.Wait()
	}
	if ctx.Err() != nil {
		return -1, fmt.Errorf("run %s: %w", argv[0], ctx.Err())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code, _ := exitStatus(ee.ProcessState)
		return code, nil
	}
	if err != nil {
		return -1, fmt.Errorf("run %s: %w", argv[0], err)
	}
	return 0, nil
}

// exitStatus turns a process state into a code (128+signal when killed by
// a signal, as shells report it) and the signal's name.
func exitStatus(ps *os.ProcessState) (int, string) {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return 128 + int(ws.Signal()), agentexec.SignalName(ws.Signal())
	}
	return ps.ExitCode(), ""
}
