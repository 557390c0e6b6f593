package hooks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
)

// ErrPrepareFailed is returned by Prepare when prepare failed on every
// attempt.
var ErrPrepareFailed = errors.New("prepare failed")

// controller drives one hook replica. Its only memory is the files in
// rep.Dir; mu keeps its own calls from interleaving.
type controller struct {
	rt  *Runtime
	rep exec.Replica
	log *slog.Logger
	mu  sync.Mutex

	// notifyConn is the notify socket Start bound, until Notifications
	// takes it (nmu, not mu: Stop holds mu for minutes).
	nmu        sync.Mutex
	notifyConn *net.UnixConn
}

func (c *controller) path(name string) string { return filepath.Join(c.rep.Dir, name) }

// started reports whether Start ran the shim before (now or in an earlier
// jacod), whatever became of it since.
func (c *controller) started() (bool, error) {
	for _, name := range []string{exitFile, shimFile} {
		_, err := os.Stat(c.path(name))
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("look for %s: %w", name, err)
		}
	}
	return false, nil
}

// Prepare writes the replica's secrets and configs to its tmpfs and the
// bundle, and runs prepare until it succeeds or the start limit is
// reached; when it fails, the tmpfs goes. Once prepare has succeeded it
// only writes the files again; once the replica was started it does
// nothing.
func (c *controller) Prepare(ctx context.Context) (err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if done, err := c.started(); err != nil || done {
		return err
	}
	// Checked before anything is fetched or written: a user, group or
	// workdir the node lacks fails here, with what is missing.
	opts, err := c.options()
	if err != nil {
		return err
	}
	if err := checkMountTargets(c.rep.Task.GetSpec().GetMounts(), c.rep.Dir); err != nil {
		return fmt.Errorf("replica %s: %w", c.id(), err)
	}
	if err := c.prepareFiles(); err != nil {
		return errors.Join(err, c.rep.RemoveFiles())
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.rep.RemoveFiles())
		}
	}()
	// Every time: the tmpfs may have been mounted anew.
	if err := c.grantAccess(opts.proc); err != nil {
		return err
	}
	if _, err := os.Stat(c.path(preparedFile)); err == nil {
		return nil
	}
	bundle := c.rep.Task.GetSpec().GetBundle()
	if err := writeBundle(c.bundlePath(), bundle.GetFiles()); err != nil {
		return err
	}
	mounts, err := c.prepareMounts(opts.proc)
	if err != nil {
		return err
	}
	if c.networked() {
		if err := c.setupNetworks(ctx); err != nil {
			return err
		}
	}
	if c.hasHook(api.HookPrepare) {
		// With the mounts (a namespace of its own per attempt), so that it
		// can fill a volume at its target; on the host network, where it
		// fetches.
		if err := c.runPrepare(ctx, bundle.GetPrepareStartLimit(), sandbox{Mounts: mounts}); err != nil {
			return err
		}
	}
	return writeJSON(c.path(preparedFile), time.Now().UTC())
}

func (c *controller) runPrepare(ctx context.Context, limit uint32, sb sandbox) error {
	if limit == 0 {
		limit = DefaultPrepareStartLimit
	}
	log, err := openLog(c.rep.LogPath)
	if err != nil {
		return err
	}
	defer log.Close()
	var last string
	for attempt := uint32(1); attempt <= limit; attempt++ {
		code, err := runCommand(ctx, []string{c.hookPath(api.HookPrepare)}, c.hookEnv(), c.bundlePath(), log, sb, proc{}, execHelper{})
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("prepare: %w", ctx.Err())
		case err != nil:
			last = err.Error()
		case code == 0:
			return nil
		default:
			last = fmt.Sprintf("exit code %d", code)
		}
		c.log.Warn("prepare failed", "attempt", attempt, "limit", limit, "result", last)
		if attempt == limit {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("prepare: %w", ctx.Err())
		case <-time.After(c.rt.prepareBackoff):
		}
	}
	return fmt.Errorf("%w: %d attempts, last: %s", ErrPrepareFailed, limit, last)
}

// Start runs launch under a detached shim and returns once launch runs,
// or exec.ErrAlreadyStarted when a shim was started for this replica
// before.
func (c *controller) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if done, err := c.started(); err != nil {
		return err
	} else if done {
		return exec.ErrAlreadyStarted
	}
	if _, err := os.Stat(c.hookPath(api.HookLaunch)); err != nil {
		return fmt.Errorf("start before prepare: %w", err)
	}
	sb, err := c.sandbox()
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	opts, err := c.options()
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	spec := launchSpec{
		Argv:       append([]string{c.hookPath(api.HookLaunch)}, c.rep.Task.GetSpec().GetCommand()...),
		Env:        c.hookEnv(),
		Dir:        opts.dir,
		Bundle:     c.bundlePath(),
		Proc:       opts.proc,
		StopSignal: opts.stop,
		Sandbox:    sb,
	}
	if c.notifies() {
		// Bound before launch runs, so that its first READY=1 finds it.
		conn, err := c.bindNotify(opts.proc.Cred)
		if err != nil {
			return fmt.Errorf("start: %w", err)
		}
		c.holdNotify(conn)
		spec.Env = append(spec.Env, c.notifyEnv()...)
	}
	if err := writeJSON(c.path(launchFile), spec); err != nil {
		c.releaseNotify()
		return err
	}
	if err := c.startShim(ctx); err != nil {
		c.releaseNotify()
		return fmt.Errorf("start launch: %w", err)
	}
	c.log.Info("launch started")
	return nil
}

// startShim runs the shim's first stage and reads the second stage's word
// on the ready pipe.
func (c *controller) startShim(ctx context.Context) error {
	log, err := openLog(c.rep.LogPath)
	if err != nil {
		return err
	}
	defer log.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("ready pipe: %w", err)
	}
	defer r.Close()
	argv := append(append([]string(nil), c.rt.shimArgv...), c.rep.Dir)
	cmd := osexec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), c.rt.shimEnv...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.ExtraFiles = []*os.File{w}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("run shim %q: %w", argv, err)
	}
	if err := cmd.Wait(); err != nil {
		// The first stage writes why on the pipe; no second stage holds it.
		if word, _ := io.ReadAll(r); len(word) > 0 {
			return fmt.Errorf("shim: %s", strings.TrimPrefix(strings.TrimSpace(string(word)), "error: "))
		}
		return fmt.Errorf("shim %q: %w (see %s)", argv, err, c.rep.LogPath)
	}
	stop := context.AfterFunc(ctx, func() { r.SetReadDeadline(time.Now()) })
	defer stop()
	word, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("wait for shim: %w", err)
	}
	switch msg := strings.TrimSpace(string(word)); {
	case msg == "ok":
		return nil
	case msg == "":
		return fmt.Errorf("shim exited before starting launch (see %s)", c.rep.LogPath)
	default:
		return errors.New(strings.TrimPrefix(msg, "error: "))
	}
}

// Wait follows the shim until it records launch's exit.
func (c *controller) Wait(ctx context.Context) (exec.Exit, error) {
	tick := time.NewTicker(c.rt.pollInterval)
	defer tick.Stop()
	for {
		rec, ok, err := readExit(c.rep.Dir)
		if err != nil || ok {
			return rec.exit(), err
		}
		shim, ok, err := readProc(c.path(shimFile))
		if err != nil {
			return exec.Exit{}, err
		}
		if !ok {
			return exec.Exit{}, exec.ErrNotFound
		}
		if !shim.alive() {
			// It may have written the record just before exiting.
			if rec, ok, err := readExit(c.rep.Dir); err != nil || ok {
				return rec.exit(), err
			}
			// Killed outright, it left launch running unwatched: follow
			// launch, whose exit code no one can learn.
			launch, _, err := readProc(c.path(childFile))
			if err != nil {
				return exec.Exit{}, err
			}
			if !launch.alive() {
				return exec.Exit{Code: -1}, ErrShimLost
			}
		}
		select {
		case <-ctx.Done():
			return exec.Exit{}, ctx.Err()
		case <-tick.C:
		}
	}
}

// shimExitWait bounds how long Remove waits for a shim that has recorded
// launch's exit to end: it writes the record, then exits.
const shimExitWait = 5 * time.Second

// awaitEnded returns nil once nothing of the replica runs. A shim still
// alive after recording launch's exit is finishing, and is waited for (up
// to shimExitWait); one that recorded nothing means the replica runs.
func (c *controller) awaitEnded(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, shimExitWait)
	defer cancel()
	tick := time.NewTicker(c.rt.pollInterval)
	defer tick.Stop()
	for {
		p, err := c.processes()
		if err != nil || !p.running() {
			return err
		}
		if _, recorded, err := readExit(c.rep.Dir); err != nil {
			return err
		} else if !recorded {
			return fmt.Errorf("remove replica %s: still running, stop it first", c.rep.Task.GetId())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("remove replica %s: its shim still runs %v after recording launch's exit: %w", c.id(), shimExitWait, ctx.Err())
		case <-tick.C:
		}
	}
}

func (e exitRecord) exit() exec.Exit {
	return exec.Exit{Code: e.Code, Signal: e.Signal, At: e.At}
}

// Remove runs cleanup (when the bundle has one and is still on the node),
// unmounts the tmpfs of the replica's files and deletes the bundle, its
// anonymous volumes and the state files. A failing cleanup is
// reported, but the files are deleted all the same, so a second Remove
// succeeds.
func (c *controller) Remove(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.awaitEnded(ctx); err != nil {
		return err
	}
	// The network goes first: should it fail, nothing else is touched
	// and the next Remove tries it all again.
	if err := c.teardownNetworks(ctx); err != nil {
		return fmt.Errorf("remove replica %s: %w", c.id(), err)
	}
	c.releaseNotify()
	var cleanupErr error
	if _, err := os.Stat(c.hookPath(api.HookCleanup)); err == nil {
		cleanupErr = c.runCleanup(ctx)
	}
	if err := c.rep.RemoveFiles(); err != nil {
		return fmt.Errorf("remove replica %s: %w", c.id(), err)
	}
	if err := os.RemoveAll(c.bundlePath()); err != nil {
		return fmt.Errorf("remove bundle: %w", err)
	}
	if err := c.removeMounts(); err != nil {
		return err
	}
	for _, name := range stateFiles {
		if err := os.Remove(c.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", name, err)
		}
	}
	return cleanupErr
}

func (c *controller) runCleanup(ctx context.Context) error {
	log, err := openLog(c.rep.LogPath)
	if err != nil {
		return err
	}
	defer log.Close()
	code, err := runCommand(ctx, []string{c.hookPath(api.HookCleanup)}, c.hookEnv(), c.bundlePath(), log, sandbox{}, proc{}, execHelper{})
	if err == nil && code != 0 {
		err = fmt.Errorf("exit code %d", code)
	}
	if err != nil {
		c.log.Error("cleanup failed", "err", err)
		return fmt.Errorf("cleanup: %w", err)
	}
	return nil
}

// Exec runs argv with the replica's env, user and limits in its workdir
// (its bundle directory by default), in its network namespace and with
// its resolv.conf when it is on networks, and with its mounts: in the
// running replica's own mount namespace when it has one (runningMountNS);
// output is discarded (a health check's verdict is its exit code).
func (c *controller) Exec(ctx context.Context, argv []string) (int, error) {
	if len(argv) == 0 {
		return -1, errors.New("exec: empty argv")
	}
	if _, err := os.Stat(c.bundlePath()); errors.Is(err, fs.ErrNotExist) {
		return -1, exec.ErrNotFound
	}
	sb, err := c.sandbox()
	if err != nil {
		return -1, fmt.Errorf("exec: %w", err)
	}
	opts, err := c.options()
	if err != nil {
		return -1, fmt.Errorf("exec: %w", err)
	}
	if sb.ownMounts() {
		if ns := c.runningMountNS(); ns != nil {
			defer ns.Close()
			sb.join = ns
		}
	}
	return runCommand(ctx, argv, c.hookEnv(), opts.dir, nil, sb, opts.proc, c.execHelper())
}
