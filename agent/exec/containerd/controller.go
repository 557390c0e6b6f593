package containerd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	runc "github.com/containerd/containerd/api/types/runc/options"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"

	"github.com/jaco-project/jaco/agent/exec"
)

// controller drives one replica's container; its id is the container id.
type controller struct {
	rt  *Runtime
	rep exec.Replica
	id  string
}

var _ exec.Controller = (*controller)(nil)

// Prepare writes the replica's secrets and configs to its tmpfs, unpacks
// the image, resolves the spec's overlay networks (waiting for the node's
// blocks), makes the network namespace, creates the container (not its
// task) and fills its empty volumes from the image (copyUp). When it
// fails, the tmpfs goes.
func (c *controller) Prepare(ctx context.Context) (err error) {
	if err := c.checkIsolation(); err != nil {
		return err
	}
	if err := c.checkNetworks(); err != nil {
		return err
	}
	if err := c.prepareFiles(); err != nil {
		return errors.Join(err, c.rep.RemoveFiles())
	}
	defer func() {
		if err != nil {
			if rerr := c.rep.RemoveFiles(); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
	}()
	// Checked and made also for a container prepared before: the node may
	// have lost a created host path or its init binary since.
	files, err := c.prepareOptions()
	if err != nil {
		return fmt.Errorf("replica %s: %w", c.id, err)
	}
	if ctr, err := c.rt.client.LoadContainer(ctx, c.id); err == nil {
		// Prepared before (agent restart): a copy into its volumes may
		// have been cut short with the agent, so it is done again unless
		// the container ran.
		if started, err := c.started(ctx, ctr); err != nil || started {
			return err
		}
		return c.copyUp(ctx, files.volumeMounts)
	} else if !errdefs.IsNotFound(err) {
		return fmt.Errorf("replica %s: %w", c.id, err)
	}
	img, err := c.rt.ensureImage(ctx, c.rep.Task.GetSpec().GetImage(), c.rep.Task.GetSpec().GetRegistryAuth())
	if err != nil {
		return fmt.Errorf("replica %s: %w", c.id, err)
	}
	st, err := loadState(c.rep.Dir)
	if err != nil {
		return err
	}
	if err := c.resolveNetworks(ctx, &st); err != nil {
		return err
	}
	if files.resolvConf, err = c.writeResolvConf(st); err != nil {
		return fmt.Errorf("replica %s: %w", c.id, err)
	}
	if err := c.ensureNetns(&st); err != nil {
		return fmt.Errorf("replica %s: %w", c.id, err)
	}
	opts, err := specOpts(img, c.rep, st.Netns, files)
	if err != nil {
		return fmt.Errorf("replica %s: %w", c.id, err)
	}
	_, err = c.rt.client.NewContainer(ctx, c.id,
		client.WithImage(img),
		client.WithSnapshotter(Snapshotter),
		client.WithNewSnapshot(c.id, img),
		client.WithRuntime(RuncRuntime, &runc.Options{Root: c.rt.runcRoot()}),
		client.WithNewSpec(opts...),
		client.WithContainerLabels(map[string]string{
			"jaco.replica": c.rep.Task.GetId(),
			"jaco.service": c.rep.Task.GetServiceName(),
		}),
	)
	if err != nil && !errdefs.IsAlreadyExists(err) {
		return fmt.Errorf("replica %s: create container: %w", c.id, err)
	}
	return c.copyUp(ctx, files.volumeMounts)
}

// Start wires the network (eth0 on the node's bridge, eth1… on the
// overlay networks) and starts the task with its output going to
// LogPath (written by the shim). A task that exists already, running or
// ended, is not started again: Start returns exec.ErrAlreadyStarted.
func (c *controller) Start(ctx context.Context) error {
	ctr, err := c.rt.client.LoadContainer(ctx, c.id)
	if errdefs.IsNotFound(err) {
		return fmt.Errorf("replica %s: not prepared: %w", c.id, exec.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("replica %s: %w", c.id, err)
	}
	if task, err := ctr.Task(ctx, nil); err == nil {
		s, err := task.Status(ctx)
		if err != nil {
			return fmt.Errorf("replica %s: task status: %w", c.id, err)
		}
		if err := c.attachAdopted(ctx); err != nil {
			return err
		}
		if s.Status != client.Created {
			return exec.ErrAlreadyStarted
		}
		// Created by a Start that did not get to start it.
		if err := task.Start(ctx); err != nil {
			return fmt.Errorf("replica %s: start task: %w", c.id, err)
		}
		return nil
	} else if !errdefs.IsNotFound(err) {
		return fmt.Errorf("replica %s: %w", c.id, err)
	}
	st, err := loadState(c.rep.Dir)
	if err != nil {
		return err
	}
	if st.Netns == "" {
		return fmt.Errorf("replica %s: no network namespace (not prepared)", c.id)
	}
	if st.Address == "" {
		addr, err := c.setupNetwork(ctx, st.Netns)
		if err != nil {
			return fmt.Errorf("replica %s: %w", c.id, err)
		}
		st.Address = addr
		if err := saveState(c.rep.Dir, st); err != nil {
			return err
		}
	}
	if err := c.setupOverlay(ctx, &st); err != nil {
		return err
	}
	if err := c.attach(ctx, st.Address); err != nil {
		return err
	}
	if err := c.writeHosts(st.Address); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.rep.LogPath), 0o755); err != nil {
		return fmt.Errorf("replica %s: log dir: %w", c.id, err)
	}
	task, err := ctr.NewTask(ctx, cio.LogFile(c.rep.LogPath), c.withRuncRoot)
	if err != nil {
		return fmt.Errorf("replica %s: create task: %w", c.id, err)
	}
	if err := task.Start(ctx); err != nil {
		_, _ = task.Delete(context.WithoutCancel(ctx), client.WithProcessKill)
		return fmt.Errorf("replica %s: start task: %w", c.id, err)
	}
	c.rt.log.InfoContext(ctx, "replica started", "task_id", c.rep.Task.GetId(), "pid", task.Pid(), "address", st.Address, "networks", st.NetworkAddresses)
	return nil
}

// withRuncRoot keeps runc's state under the runtime's state dir.
func (c *controller) withRuncRoot(_ context.Context, _ *client.Client, ti *client.TaskInfo) error {
	ti.Options = &runc.Options{Root: c.rt.runcRoot()}
	return nil
}

// task returns the replica's task, or exec.ErrNotFound.
func (c *controller) task(ctx context.Context) (client.Task, error) {
	ctr, err := c.rt.client.LoadContainer(ctx, c.id)
	if err == nil {
		var t client.Task
		if t, err = ctr.Task(ctx, nil); err == nil {
			return t, nil
		}
	}
	if errdefs.IsNotFound(err) {
		return nil, fmt.Errorf("replica %s: %w", c.id, exec.ErrNotFound)
	}
	return nil, fmt.Errorf("replica %s: %w", c.id, err)
}

// Wait follows the task (one this process started, or one it adopted)
// until it ends.
func (c *controller) Wait(ctx context.Context) (exec.Exit, error) {
	task, err := c.task(ctx)
	if err != nil {
		return exec.Exit{}, err
	}
	ch, err := task.Wait(ctx)
	if err != nil {
		return exec.Exit{}, fmt.Errorf("replica %s: wait: %w", c.id, err)
	}
	select {
	case <-ctx.Done():
		return exec.Exit{}, ctx.Err()
	case s := <-ch:
		code, at, err := s.Result()
		if err != nil {
			return exec.Exit{}, fmt.Errorf("replica %s: wait: %w", c.id, err)
		}
		return exitOf(code, at), nil
	}
}

// Remove deletes the task (killing it if it still runs), the tmpfs of its
// secrets and configs, the overlay attachments and the node network (leases freed), the namespace, the container and its snapshot. Missing pieces are skipped.
func (c *controller) Remove(ctx context.Context) error {
	var errs []error
	if task, err := c.task(ctx); err == nil {
		if _, err := task.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete task: %w", err))
		}
	} else if !errors.Is(err, exec.ErrNotFound) {
		errs = append(errs, err)
	}
	if len(errs) == 0 { // no process of the replica holds its files now
		if err := c.rep.RemoveFiles(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.detach(ctx); err != nil {
		errs = append(errs, err)
	}
	st, err := loadState(c.rep.Dir)
	if err != nil {
		errs = append(errs, err)
	}
	if st.Netns != "" || st.Address != "" || len(st.Networks) > 0 {
		if err := c.teardownOverlay(ctx, st); err != nil {
			errs = append(errs, err)
		} else if err := c.teardownNetwork(ctx, st.Netns); err != nil {
			errs = append(errs, err)
		} else if err := removeNetns(st.Netns); err != nil {
			errs = append(errs, err)
		} else if err := os.Remove(filepath.Join(c.rep.Dir, stateFile)); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	if ctr, err := c.rt.client.LoadContainer(ctx, c.id); err == nil {
		if err := ctr.Delete(ctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete container: %w", err))
		}
	} else if !errdefs.IsNotFound(err) {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove replica %s: %w", c.id, err)
	}
	return nil
}

// Address is the container's IP on the node's bridge.
func (c *controller) Address(ctx context.Context) (string, error) {
	st, err := loadState(c.rep.Dir)
	if err != nil {
		return "", err
	}
	if st.Address == "" {
		return "", fmt.Errorf("replica %s: no address (not started): %w", c.id, exec.ErrNotFound)
	}
	return st.Address, nil
}

// Exec runs argv in the container (same user, env and namespaces as the
// replica), discarding its output, and returns its exit code.
func (c *controller) Exec(ctx context.Context, argv []string) (int, error) {
	if len(argv) == 0 {
		return 0, errors.New("exec: empty argv")
	}
	task, err := c.task(ctx)
	if err != nil {
		return 0, err
	}
	spec, err := task.Spec(ctx)
	if err != nil {
		return 0, fmt.Errorf("replica %s: exec: %w", c.id, err)
	}
	pspec := *spec.Process
	pspec.Args = argv
	pspec.Terminal = false
	var b [6]byte
	_, _ = rand.Read(b[:])
	p, err := task.Exec(ctx, "exec-"+hex.EncodeToString(b[:]), &pspec, cio.NullIO)
	if err != nil {
		return 0, fmt.Errorf("replica %s: exec: %w", c.id, err)
	}
	defer func() { _, _ = p.Delete(context.WithoutCancel(ctx), client.WithProcessKill) }()
	ch, err := p.Wait(ctx)
	if err != nil {
		return 0, fmt.Errorf("replica %s: exec: %w", c.id, err)
	}
	if err := p.Start(ctx); err != nil {
		return 0, fmt.Errorf("replica %s: exec %v: %w", c.id, argv, err)
	}
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case s := <-ch:
		code, _, err := s.Result()
		if err != nil {
			return 0, fmt.Errorf("replica %s: exec: %w", c.id, err)
		}
		return int(code), nil
	}
}

// signalExitBase is what runc adds to a signal number for the exit status
// of a process the signal ended.
const signalExitBase = 128

// exitOf reads runc's exit status: 128+N means signal N ended the process.
func exitOf(code uint32, at time.Time) exec.Exit {
	e := exec.Exit{Code: int(code), At: at}
	if code > signalExitBase && code < signalExitBase+65 {
		if name := unix.SignalName(syscall.Signal(code - signalExitBase)); name != "" {
			e.Signal = name
		}
	}
	return e
}
