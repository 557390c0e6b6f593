// Package containerdtest runs a private containerd for tests, benchmarks and
// the demo. The daemon gets its own root, state directory, config file and
// socket, so it never touches the machine's containerd (a Docker engine may
// run one at /run/containerd/containerd.sock; nothing here goes near it).
//
// Stop ends the daemon and cleans up what it left: the shims of containers
// still running, the runc state and the snapshot mounts under its root.
package containerdtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"golang.org/x/sys/unix"
)

// Binary is the containerd executable StartDaemon runs.
const Binary = "/usr/bin/containerd"

// Daemon is a running private containerd.
type Daemon struct {
	dir     string // root, state, config and log live here
	sockDir string // short directory under /tmp holding the sockets
	address string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd.Wait returns
	waitErr error

	stopOnce sync.Once
	stopErr  error
}

// Address is the daemon's gRPC socket path (what client.New dials).
func (d *Daemon) Address() string { return d.address }

// Dir is the directory holding the daemon's root, state, config and log.
func (d *Daemon) Dir() string { return d.dir }

// LogPath is the file the daemon's stdout and stderr go to.
func (d *Daemon) LogPath() string { return filepath.Join(d.dir, "containerd.log") }

// StartDaemon starts containerd with everything under dir (created when
// missing) and a socket in a fresh short directory under /tmp (unix socket
// paths are limited to 108 bytes). It returns once the daemon answers a
// version call, or an error including the daemon's log tail.
func StartDaemon(ctx context.Context, dir string) (*Daemon, error) {
	if _, err := os.Stat(Binary); err != nil {
		return nil, fmt.Errorf("containerd binary: %w", err)
	}
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, fmt.Errorf("containerd dir: %w", err)
	}
	sockDir, err := os.MkdirTemp("/tmp", "jcd-")
	if err != nil {
		return nil, fmt.Errorf("containerd socket dir: %w", err)
	}
	d := &Daemon{
		dir:     dir,
		sockDir: sockDir,
		address: filepath.Join(sockDir, "c.sock"),
		exited:  make(chan struct{}),
	}
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(configTOML(dir, d.address)), 0o600); err != nil {
		os.RemoveAll(sockDir)
		return nil, fmt.Errorf("containerd config: %w", err)
	}
	logf, err := os.OpenFile(d.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		os.RemoveAll(sockDir)
		return nil, fmt.Errorf("containerd log: %w", err)
	}
	defer logf.Close() // the child holds its own copy
	d.cmd = exec.Command(Binary, "--config", cfg)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	// Its own process group: a signal sent to the test's group (Ctrl-C)
	// does not reach it before Stop does its cleanup in order.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		os.RemoveAll(sockDir)
		return nil, fmt.Errorf("start containerd: %w", err)
	}
	go func() {
		d.waitErr = d.cmd.Wait()
		close(d.exited)
	}()
	if err := d.waitReady(ctx); err != nil {
		_ = d.Stop()
		return nil, fmt.Errorf("containerd at %s not ready: %w\n%s", d.address, err, d.logTail())
	}
	return d, nil
}

func (d *Daemon) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last error
	for {
		select {
		case <-d.exited:
			return fmt.Errorf("containerd exited: %v", d.waitErr)
		default:
		}
		if last = ping(ctx, d.address); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
		case <-d.exited:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func ping(ctx context.Context, address string) error {
	if _, err := os.Stat(address); err != nil {
		return err
	}
	c, err := client.New(address, client.WithTimeout(2*time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = c.Version(pctx)
	return err
}

// Stop ends the daemon (SIGTERM, SIGKILL after 10 s), kills the shims and
// containers it left, unmounts what is mounted under its directory and
// removes the socket directory. The root directory itself is left for the
// caller (a test's TempDir removes it). Safe to call more than once.
func (d *Daemon) Stop() error {
	d.stopOnce.Do(func() { d.stopErr = d.stop() })
	return d.stopErr
}

func (d *Daemon) stop() error {
	var errs []error
	if d.cmd.Process != nil {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(10 * time.Second):
			_ = d.cmd.Process.Kill()
			<-d.exited
		}
	}
	if err := killShims(d.address); err != nil {
		errs = append(errs, err)
	}
	if err := UnmountUnder(d.dir); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(d.sockDir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// logTail returns the last lines of the daemon's log, for error messages.
func (d *Daemon) logTail() string {
	b, err := os.ReadFile(d.LogPath())
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// UnmountUnder lazily unmounts dir and every mount point below it,
// deepest first (snapshot mounts of containers whose shim was killed,
// network namespaces of replicas still running). Stop calls it on the
// daemon's dir; tests call it on other dirs a daemon's containers used.
func UnmountUnder(dir string) error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("read mountinfo: %w", err)
	}
	var targets []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		if p := unescapeMount(f[4]); p == dir || strings.HasPrefix(p, dir+"/") {
			targets = append(targets, p)
		}
	}
	var errs []error
	for i := len(targets) - 1; i >= 0; i-- {
		if err := unix.Unmount(targets[i], unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", targets[i], err))
		}
	}
	return errors.Join(errs...)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
