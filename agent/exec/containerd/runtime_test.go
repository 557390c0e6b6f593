package containerd

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/errdefs"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/containerdtest"
)

// A replica gets the spec's env and the JACO_ variables; its stdout and
// stderr land in LogPath; Remove leaves no container, snapshot or
// network namespace behind.
func TestRunEnvLogsAndRemove(t *testing.T) {
	d := containerdtest.Start(t)
	n := newNode(t, d, "node-env")
	rep := replica(t, n.id, "task-env-1", &api.ServiceSpec{
		// The pause before exiting: containerd 1.6's shim loses stderr
		// written by a process that exits at once (seen in CI: stdout
		// there, stderr not); a replica living a moment longer keeps both.
		// A known limit, in the closing notes, not what this test is for.
		Command: []string{"sh", "-c", "echo to-stderr >&2; env; sleep 1; exit 5"},
		Env:     []string{"GREETING=hello"},
	})
	c := start(t, n.rt, rep)
	if e := wait(t, c); e.Code != 5 || e.Signal != "" {
		t.Fatalf("exit = %+v, want code 5", e)
	}
	// The shim copies output on its own time: the exit can be seen before
	// the last lines are in the file.
	waitLog(t, rep, "to-stderr")
	b, err := os.ReadFile(rep.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	for _, want := range append(rep.Env(), "GREETING=hello", "to-stderr") {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	st, err := loadState(rep.Dir)
	if err != nil || st.Netns == "" || st.Address == "" {
		t.Fatalf("replica state %+v, %v: want netns and address", st, err)
	}
	ctx := context.Background()
	if err := c.Remove(ctx); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if _, err := n.rt.Client().LoadContainer(ctx, "task-env-1"); !errdefs.IsNotFound(err) {
		t.Errorf("container after Remove: %v, want not found", err)
	}
	if _, err := os.Stat(st.Netns); !os.IsNotExist(err) {
		t.Errorf("netns %s after Remove: %v", st.Netns, err)
	}
	snaps := 0
	if err := n.rt.Client().SnapshotService(Snapshotter).Walk(ctx, func(_ context.Context, i snapshots.Info) error {
		if i.Name == "task-env-1" {
			snaps++
		}
		return nil
	}); err != nil {
		t.Fatalf("walk snapshots: %v", err)
	}
	if snaps != 0 {
		t.Errorf("snapshot task-env-1 left after Remove")
	}
	if err := c.Remove(ctx); err != nil {
		t.Errorf("second remove: %v", err)
	}
	if _, err := c.Wait(ctx); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("wait after remove: %v, want ErrNotFound", err)
	}
}

// Remove cleans up a replica that was prepared but never started (the
// agent was told to drop it in between), and Prepare twice is harmless.
func TestRemoveAfterPrepareOnly(t *testing.T) {
	d := containerdtest.Start(t)
	n := newNode(t, d, "node-prep")
	rep := replica(t, n.id, "task-prep-1", &api.ServiceSpec{Command: []string{"true"}})
	c, err := n.rt.Controller(rep)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 2 {
		if err := c.Prepare(ctx); err != nil {
			t.Fatalf("prepare: %v", err)
		}
	}
	st, err := loadState(rep.Dir)
	if err != nil || st.Netns == "" {
		t.Fatalf("state after prepare %+v, %v", st, err)
	}
	if _, err := c.Address(ctx); !errors.Is(err, exec.ErrNotFound) {
		t.Errorf("address before start = %v, want ErrNotFound", err)
	}
	if err := c.Remove(ctx); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if _, err := n.rt.Client().LoadContainer(ctx, "task-prep-1"); !errdefs.IsNotFound(err) {
		t.Errorf("container after Remove: %v", err)
	}
	if _, err := os.Stat(st.Netns); !os.IsNotExist(err) {
		t.Errorf("netns after Remove: %v", err)
	}
}
