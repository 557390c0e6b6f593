package integration

// Per-slot volumes with real containers (docs/adr/0061-volumes.md, "Per-
// slot volumes"): three replicas of source=pg-{{.Task.Slot}} each get
// their own volume, on the node their slot first ran on, and a killed
// replica's successor in the same slot finds what its predecessor wrote,
// on the same node though the spread would choose the other, while the
// other slots' volumes are untouched.

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slotCmd appends "slot N" to /data/log each time a replica starts, then
// idles until SIGINT.
var slotCmd = []string{"sh", "-c", `echo "slot $SLOT" >> /data/log; trap 'exit 0' INT TERM; while :; do sleep 1 & wait $!; done`}

func TestSlotVolumes(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := newContainerCluster(t, 2)
	t.Logf("cluster of %d workers with the image loaded after %v", len(c.workers), time.Since(start).Round(time.Millisecond))

	c.createService(t, "pg", []string{"--replicas", "3", "-e", "SLOT={{.Task.Slot}}",
		"--mount", "type=volume,source=pg-{{.Task.Slot}},target=/data"}, slotCmd)
	reps := c.waitRunning(t, "pg", 3, nil)
	home := map[string]string{} // slot's volume → node
	for _, r := range reps {
		slot := strings.TrimPrefix(r.Name, "pg.")
		name := "pg-" + slot
		home[name] = r.Node
		eventually(t, replicaTimeout, func() error { return slotLog(c, r, name, "slot "+slot) })
	}
	for name, node := range home {
		vol, err := decode[volumeState](c.manager.jaco("volume", "inspect", name))
		if err != nil || vol.NodeID != c.nodeIDs[node] || !slices.Equal(vol.Services, []string{"pg"}) {
			t.Fatalf("volume %s: %+v (%v); want it on %s, used by pg", name, vol, err, node)
		}
	}
	if len(home) != 3 {
		t.Fatalf("volumes %v; want pg-1, pg-2 and pg-3", home)
	}

	// A slot sharing its node with another is killed. A ballast service
	// pinned to that node makes it the one the spread would avoid (the
	// two nodes then hold one pg replica each, and it holds more tasks),
	// so the successor shows that the slot follows its volume: it runs
	// on the volume's node and finds its line; the other slots keep
	// their replicas and their one line.
	perNode := map[string]int{}
	for _, r := range reps {
		perNode[r.Node]++
	}
	var victim replica
	for _, r := range reps {
		if perNode[r.Node] == 2 {
			victim = r
		}
	}
	slot := strings.TrimPrefix(victim.Name, "pg.")
	c.createService(t, "ballast", []string{"--replicas", "2", "--constraint", "node.hostname==" + victim.Node}, idleCmd)
	c.waitRunning(t, "ballast", 2, nil)
	pid, err := c.runningPid(victim.Node, victim.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(int(pid), syscall.SIGKILL); err != nil {
		t.Fatalf("kill pid %d of replica %s: %v", pid, victim.ID, err)
	}
	eventually(t, replicaTimeout, func() error {
		reps, err := c.ps("pg", false)
		if err != nil {
			return err
		}
		for _, r := range reps {
			if r.Name == victim.Name && r.ID != victim.ID && r.State == "running" {
				if r.Node != victim.Node {
					t.Fatalf("slot %s's successor %s runs on %s; pg-%s lives on %s", slot, r.ID, r.Node, slot, victim.Node)
				}
				return slotLog(c, r, "pg-"+slot, "slot "+slot, "slot "+slot)
			}
		}
		return fmt.Errorf("pg: %v; want a new running replica of slot %s", reps, slot)
	})
	for _, r := range reps {
		if r.Name == victim.Name {
			continue
		}
		other := strings.TrimPrefix(r.Name, "pg.")
		if err := slotLog(c, r, "pg-"+other, "slot "+other); err != nil {
			t.Errorf("slot %s after slot %s's restart: %v", other, slot, err)
		}
	}
}

// slotLog checks that replica r, running, sees want in /data/log, and that
// volume's directory on r's node holds the same.
func slotLog(c *ccluster, r replica, volume string, want ...string) error {
	pid, err := c.runningPid(r.Node, r.ID)
	if err != nil {
		return err
	}
	inside, err := os.ReadFile(fmt.Sprintf("/proc/%d/root/data/log", pid))
	if err != nil {
		return fmt.Errorf("replica %s: %w", r.ID, err)
	}
	onNode, err := os.ReadFile(dataFile(c.byName(r.Node), volume, "log"))
	if err != nil {
		return fmt.Errorf("node %s: %w", r.Node, err)
	}
	lines := strings.Split(strings.TrimSuffix(string(inside), "\n"), "\n")
	if string(inside) != string(onNode) || !slices.Equal(lines, want) {
		return fmt.Errorf("replica %s sees %q, volume %s on %s holds %q; want %q", r.ID, inside, volume, r.Node, onNode, want)
	}
	return nil
}
