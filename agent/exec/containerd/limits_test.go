package containerd

import (
	"context"
	"net/netip"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/containerdtest"
)

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Limits reach the container's cgroup (v1 or v2 layout, read from the host), and Exec reports
// the exit code of the command it runs inside.
func TestLimitsAndExec(t *testing.T) {
	d := containerdtest.Start(t)
	n := newNode(t, d, "node-limits")
	rep := replica(t, n.id, "task-limits-1", &api.ServiceSpec{
		Command: []string{"sleep", "3600"},
		Limits:  &api.Resources{MemoryBytes: 64 << 20, NanoCpus: 500_000_000},
	})
	c := start(t, n.rt, rep)
	ctx := context.Background()
	task, err := c.(*controller).task(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := cgroupValue(t, task.Pid(), "memory", "memory.limit_in_bytes", "memory.max"); got != "67108864" {
		t.Errorf("memory limit %s, want 67108864", got)
	}
	if got := cgroupValue(t, task.Pid(), "cpu", "cpu.cfs_quota_us", "cpu.max"); got != "50000" && got != "50000 100000" {
		t.Errorf("cpu quota %s, want 50000 per 100000", got)
	}
	cases := []struct {
		name string
		argv []string
		want int
	}{
		{"env inside exec", []string{"sh", "-c", `test "$JACO_REPLICA_ID" = task-limits-1`}, 0},
		{"exit code", []string{"sh", "-c", "exit 3"}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.Exec(ctx, tc.argv)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("exec %v = %d, want %d", tc.argv, got, tc.want)
			}
		})
	}
	if _, err := c.Exec(ctx, []string{"/no/such/binary"}); err == nil {
		t.Error("exec of a missing binary: no error")
	}
}
