package integration

// A volume moves with its replica (docs/adr/0064-volume-move.md): a
// service under --volume-move move whose volume's node is drained has its
// replica stopped, the volume copied to the other worker (node to node,
// over the nodes' mTLS), and the replica started there on the data; the
// old node's copy is deleted only once the new replica runs. Pinned
// volumes (the default) wait volume_unavailable instead: volumes_test.go.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// moveCmd writes a random id into /data/id once (an empty volume gets
// one, a moved one keeps its own), then idles.
var moveCmd = []string{"sh", "-c", `[ -s /data/id ] || cat /proc/sys/kernel/random/uuid > /data/id; trap 'exit 0' INT TERM; while :; do sleep 1 & wait $!; done`}

func TestVolumeMove(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := newContainerCluster(t, 2)
	t.Logf("cluster ready after %v", time.Since(start).Round(time.Millisecond))

	c.createService(t, "mv", []string{"--mount", "type=volume,source=mvdata,target=/data", "--volume-move", "move"}, moveCmd)
	before := c.waitRunning(t, "mv", 1, nil)[0]
	home := c.byName(before.Node)
	var other *nsDaemon
	for _, w := range c.workers {
		if w != home {
			other = w
		}
	}
	var id []byte
	eventually(t, replicaTimeout, func() (err error) {
		id, err = os.ReadFile(dataFile(home, "mvdata", "id"))
		if err == nil && len(id) == 0 {
			err = fmt.Errorf("/data/id is empty")
		}
		return err
	})
	// Beside the replica's file, one with an owner, a mode and a time of
	// its own, and a symlink: the copy keeps them.
	owned := dataFile(home, "mvdata", "owned")
	stamp := time.Date(2021, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, err := range []error{
		os.WriteFile(owned, []byte("x"), 0o640), os.Chown(owned, 1234, 5678), os.Chmod(owned, 0o640),
		os.Chtimes(owned, stamp, stamp), os.Symlink("id", dataFile(home, "mvdata", "link")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}

	moveStart := time.Now()
	wantOK(t, c.manager.jaco("node", "update", "--availability", "drain", home.name))
	homeDir := filepath.Join(home.dir, "volumes", "mvdata")
	var moving []string // the pending messages seen meanwhile
	var after replica
	eventually(t, replicaTimeout, func() error {
		// The directory first: a replica read as not running after its
		// directory was seen gone was not running when it went.
		_, gone := os.Stat(homeDir)
		reps, err := c.ps("mv", false)
		if err != nil {
			return err
		}
		running := len(reps) == 1 && reps[0].State == "running" && reps[0].Node == other.name
		if gone == nil && !running {
			for _, r := range reps {
				if strings.HasPrefix(r.State, "pending") && (len(moving) == 0 || moving[len(moving)-1] != r.State+" "+r.Message) {
					moving = append(moving, r.State+" "+r.Message)
				}
			}
		}
		if gone != nil && !running {
			t.Fatalf("%s's copy of mvdata was deleted before the replica ran on %s: %v", home.name, other.name, reps)
		}
		if !running {
			return fmt.Errorf("mv: %v; want one replica running on %s", reps, other.name)
		}
		after = reps[0]
		return nil
	})
	t.Logf("replica running on %s %v after the drain; pending states seen: %q", other.name, time.Since(moveStart).Round(time.Millisecond), moving)

	got, err := os.ReadFile(dataFile(other, "mvdata", "id"))
	if err != nil || string(got) != string(id) {
		t.Fatalf("/data/id on %s: %q (%v), want %q as written on %s", other.name, got, err, id, home.name)
	}
	pid, err := c.runningPid(after.Node, after.ID)
	if err != nil {
		t.Fatal(err)
	}
	if inside, err := os.ReadFile(fmt.Sprintf("/proc/%d/root/data/id", pid)); err != nil || string(inside) != string(id) {
		t.Fatalf("replica %s sees /data/id %q (%v), want %q", after.ID, inside, err, id)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(dataFile(other, "mvdata", "owned"), &st); err != nil || st.Uid != 1234 || st.Gid != 5678 || st.Mode&0o7777 != 0o640 ||
		time.Unix(st.Mtim.Unix()).UTC() != stamp {
		t.Errorf("owned on %s: uid %d gid %d mode %o mtime %v (%v); want 1234 5678 640 %v", other.name, st.Uid, st.Gid, st.Mode&0o7777,
			time.Unix(st.Mtim.Unix()).UTC(), err, stamp)
	}
	if l, err := os.Readlink(dataFile(other, "mvdata", "link")); err != nil || l != "id" {
		t.Errorf("link on %s: %q (%v), want id", other.name, l, err)
	}
	vol, err := decode[volumeState](c.manager.jaco("volume", "inspect", "mvdata"))
	if err != nil || vol.Hostname != other.name {
		t.Fatalf("volume mvdata: %+v (%v); want it on %s", vol, err, other.name)
	}
	// Its replica runs on the new node: the old copy goes.
	eventually(t, goneTimeout, func() error {
		if _, err := os.Stat(homeDir); err == nil {
			return fmt.Errorf("%s still holds %s", home.name, homeDir)
		}
		return nil
	})
	t.Logf("moved in %v; old copy gone after %v", time.Since(moveStart).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}
