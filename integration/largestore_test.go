package integration

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestListingsBeyondTheMessageLimit: a store far beyond gRPC's 4 MiB
// message limit (60 services with 100 KB specs, and a task copying each
// spec: about 12 MB) is listed whole by service ls, service ps, node ls
// and status, on the manager and on the copy restored from its backup.
// Before list replies were paged, each of them failed ResourceExhausted.
func TestListingsBeyondTheMessageLimit(t *testing.T) {
	t.Parallel()
	m := startDaemon(t, "m")
	m.initQuiet()
	// The replicas stay pending, with no node to run on: their tasks weigh
	// as much as running ones without a container runtime.
	wantOK(t, m.jaco("node", "update", "--availability", "pause", "m"))
	pad := "PAD=" + strings.Repeat("x", 100<<10)
	var names []string
	for i := range 60 {
		name := fmt.Sprintf("s%02d", i)
		wantOK(t, m.jaco("service", "create", "-d", "--name", name, "-e", pad, "jaco.local/none:latest"))
		names = append(names, name)
	}
	eventually(t, 60*time.Second, func() error { return listsWhole(m, names) })

	file := filepath.Join(t.TempDir(), "cluster.backup")
	key := strings.TrimSpace(wantOK(t, m.jaco("backup", "-o", file, "--quiet")).stdout)
	m.stop()
	dir := filepath.Join(t.TempDir(), "restored")
	wantOK(t, runStdin(key, "restore", file, "--data-dir", dir, "--node-name", "m", "--advertise-addr", m.addr))
	m2 := startDaemonAt(t, "m", dir, m.addr, m.flags...)
	eventually(t, 60*time.Second, func() error { return listsWhole(m2, names) })
}

// listsWhole checks that every list command of d shows each service of
// names, with its pending replica.
func listsWhole(d *daemon, names []string) error {
	svcs, err := decode[[]struct {
		Name    string `json:"name"`
		Desired uint64 `json:"desired"`
	}](d.jaco("service", "ls", "--format", "json"))
	if err != nil {
		return fmt.Errorf("service ls: %w", err)
	}
	var listed []string
	for _, s := range svcs {
		listed = append(listed, s.Name)
	}
	if !slices.Equal(listed, names) {
		return fmt.Errorf("service ls lists %d services %v, want %d, by name", len(listed), listed, len(names))
	}
	st, err := decode[struct {
		Services []struct {
			Name string `json:"name"`
		} `json:"services"`
	}](d.jaco("status", "--format", "json"))
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if len(st.Services) != len(names) {
		return fmt.Errorf("status shows %d services, want %d", len(st.Services), len(names))
	}
	for _, name := range []string{names[0], names[len(names)-1]} {
		rs, err := d.replicas(name)
		if err != nil {
			return fmt.Errorf("service ps %s: %w", name, err)
		}
		if len(rs) != 1 || !strings.HasPrefix(rs[0].State, "pending") {
			return fmt.Errorf("service ps %s: %v, want one pending replica", name, rs)
		}
	}
	if err := d.jaco("node", "ls").err(); err != nil {
		return fmt.Errorf("node ls: %w", err)
	}
	return nil
}

// TestAssignmentsBeyondTheMessageLimit: a worker running replicas whose
// specs total beyond gRPC's 4 MiB message limit (6 hook bundles of
// 900 KB) gets its whole set again when it reconnects, and goes on taking
// work. Before the set was sent in parts, the agent's assignments stream
// failed on that one message, again and again, and the worker got no
// assignments at all.
func TestAssignmentsBeyondTheMessageLimit(t *testing.T) {
	t.Parallel()
	m := startDaemon(t, "m", "--heartbeat-period", "500ms")
	w := startDaemon(t, "w1", "--heartbeat-period", "500ms")
	m.initQuiet()
	wantOK(t, w.jaco("node", "join", "--peer", m.addr, "--token", m.joinToken("worker")))
	wantOK(t, m.jaco("node", "update", "--availability", "pause", "m"))
	waitReady(t, m, "w1")
	out := t.TempDir()
	big := writeBundle(t, out, "# "+strings.Repeat("x", 900<<10)+"\nexec sleep 3600")
	var names []string
	for i := range 6 {
		name := fmt.Sprintf("big%d", i)
		wantOK(t, m.jaco("service", "create", "-d", "--name", name, "-e", "OUT="+out, "--bundle", big))
		names = append(names, name)
	}
	for _, name := range names {
		eventually(t, 60*time.Second, func() error { _, err := m.runningReplicas(name, 1); return err })
	}

	w.restart()
	small := writeBundle(t, out, "exec sleep 3600")
	wantOK(t, m.jaco("service", "create", "-d", "--name", "after", "-e", "OUT="+out, "--bundle", small))
	eventually(t, 60*time.Second, func() error { _, err := m.runningReplicas("after", 1); return err })
	for _, name := range names {
		if _, err := m.runningReplicas(name, 1); err != nil {
			t.Error(err)
		}
	}
}
