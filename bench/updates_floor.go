package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jaco-project/jaco/agent/exec/hooks"
)

// updateLaunch is the replicas' launch hook, jaco's and the floor's.
const updateLaunch = "#!/bin/sh\nexec sleep 3600\n"

// floorPoll is how often the floor looks whether a stopped shim is gone.
// The hooks runtime looks every 100 ms (hooks.DefaultPollInterval); the
// floor looks finer so that it is the floor.
const floorPoll = 2 * time.Millisecond

// shimFloor replaces replicas directly, the way the hooks runtime starts
// and stops them but without jacod: each replica is a directory holding
// bundle/launch and hooks-launch.json, run by `jacod hook-shim DIR`
// (which detaches, runs launch in its own process group and says "ok" on
// fd 3 once launch runs); stopping it is SIGINT to the shim, which
// forwards it to launch's group, then waiting until the shim is gone.
type shimFloor struct {
	o    updatesOpts
	root string
	log  *os.File

	mu   sync.Mutex
	gen  int
	live map[int]string // shim pid → replica dir
}

func newShimFloor(o updatesOpts) (*shimFloor, error) {
	f := &shimFloor{o: o, root: filepath.Join(o.work, "floor"), live: map[int]string{}}
	if err := os.MkdirAll(f.root, 0o700); err != nil {
		return nil, err
	}
	lf, err := os.Create(filepath.Join(f.root, "shims.log"))
	if err != nil {
		return nil, err
	}
	f.log = lf
	return f, nil
}

// close stops whatever replicas are left.
func (f *shimFloor) close() {
	f.mu.Lock()
	pids := make([]int, 0, len(f.live))
	for pid := range f.live {
		pids = append(pids, pid)
	}
	f.mu.Unlock()
	for _, pid := range pids {
		_ = f.stop(context.Background(), pid)
	}
	f.log.Close()
}

// newDir writes a fresh replica directory, as the runtime's Prepare and
// Start do (bundle, then the launch spec the shim reads).
func (f *shimFloor) newDir(slot int) (string, error) {
	f.mu.Lock()
	f.gen++
	dir := filepath.Join(f.root, fmt.Sprintf("g%d-s%d", f.gen, slot))
	f.mu.Unlock()
	bundle := filepath.Join(dir, "bundle")
	if err := os.MkdirAll(bundle, 0o755); err != nil {
		return "", err
	}
	launch := filepath.Join(bundle, "launch")
	if err := os.WriteFile(launch, []byte(updateLaunch), 0o755); err != nil {
		return "", err
	}
	spec, err := json.Marshal(map[string]any{
		"argv": []string{launch},
		"env":  []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", fmt.Sprintf("JACO_SLOT=%d", slot)},
		"dir":  bundle,
	})
	if err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "hooks-launch.json"), spec, 0o644)
}

// start runs the shim on dir and returns the shim's pid once launch runs.
func (f *shimFloor) start(ctx context.Context, dir string) (int, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	cmd := exec.Command(f.o.jacod, "hook-shim", dir)
	cmd.Stdout, cmd.Stderr = f.log, f.log
	cmd.ExtraFiles = []*os.File{w}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return 0, fmt.Errorf("start shim: %w", err)
	}
	if err := cmd.Wait(); err != nil {
		return 0, fmt.Errorf("shim first stage: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { r.SetReadDeadline(time.Now()) })
	defer stop()
	word, err := io.ReadAll(r)
	if err != nil {
		return 0, fmt.Errorf("wait for shim: %w", err)
	}
	if strings.TrimSpace(string(word)) != "ok" {
		return 0, fmt.Errorf("shim: %q", word)
	}
	var rec struct {
		Pid int `json:"pid"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "hooks-shim.json"))
	if err != nil {
		return 0, fmt.Errorf("read shim record: %w", err)
	}
	if err := json.Unmarshal(b, &rec); err != nil || rec.Pid <= 0 {
		return 0, fmt.Errorf("shim record %s: %v", b, err)
	}
	f.mu.Lock()
	f.live[rec.Pid] = dir
	f.mu.Unlock()
	return rec.Pid, nil
}

// stop sends SIGINT to the shim (the runtime's first rung) and waits until
// it is gone; after 10 s it asks for the kill (SIGTERM to the shim), then
// SIGKILLs it.
func (f *shimFloor) stop(ctx context.Context, pid int) error {
	defer func() {
		f.mu.Lock()
		delete(f.live, pid)
		f.mu.Unlock()
	}()
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("SIGINT shim %d: %w", pid, err)
	}
	for _, rung := range []struct {
		grace time.Duration
		next  syscall.Signal
	}{{10 * time.Second, syscall.SIGTERM}, {5 * time.Second, syscall.SIGKILL}} {
		deadline := time.Now().Add(rung.grace)
		for hooks.PIDAlive(pid) && time.Now().Before(deadline) {
			if err := ctx.Err(); err != nil {
				return err
			}
			time.Sleep(floorPoll)
		}
		if !hooks.PIDAlive(pid) {
			return nil
		}
		_ = syscall.Kill(pid, rung.next)
	}
	return fmt.Errorf("shim %d did not end", pid)
}

// measure starts n old replicas (not timed), then times replacing them p
// at a time: each slot's old replica stopped, then its new one started;
// the next batch begins once the whole batch is done (as the update
// machine's parallelism does with a 0 s monitor and stop-first order).
func (f *shimFloor) measure(ctx context.Context, p int) (*updateSample, error) {
	n := f.o.replicas
	old := make([]int, n)
	for i := range n {
		dir, err := f.newDir(i + 1)
		if err != nil {
			return nil, err
		}
		if old[i], err = f.start(ctx, dir); err != nil {
			return nil, err
		}
	}
	// The new directories are written before the clock starts (the
	// runtime's Prepare writes the bundle inside jaco's figure), which
	// only makes the floor lower.
	dirs := make([]string, n)
	for i := range n {
		var err error
		if dirs[i], err = f.newDir(i + 1); err != nil {
			return nil, err
		}
	}
	s := &updateSample{Kind: "floor", LoadAvg: loadAverage()}
	niu := make([]int, n)
	t0 := time.Now()
	for lo := 0; lo < n; lo += p {
		hi := min(lo+p, n)
		errs := make([]error, hi-lo)
		var wg sync.WaitGroup
		for i := lo; i < hi; i++ {
			wg.Go(func() {
				if err := f.stop(ctx, old[i]); err != nil {
					errs[i-lo] = err
					return
				}
				var err error
				niu[i], err = f.start(ctx, dirs[i])
				errs[i-lo] = err
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	s.TotalS = time.Since(t0).Seconds()
	s.Replaced = n
	// The new replicas are not part of the figure: stop them untimed.
	var errs []error
	for _, pid := range niu {
		errs = append(errs, f.stop(ctx, pid))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}
