package containerd

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/containerdtest"
	"github.com/jaco-project/jaco/internal/ociimage"
	"github.com/jaco-project/jaco/internal/testenv"
	"github.com/jaco-project/jaco/internal/waitfor"
)

const testImage = "jaco.local/busybox:latest"

func TestMain(m *testing.M) { os.Exit(containerdtest.RunIsolated(m)) }

// indexHTML is what the test image's httpd serves.
const indexHTML = "hello from jaco\n"

// testArchive builds the busybox image the tests run.
func testArchive(t *testing.T) []byte {
	t.Helper()
	if _, err := os.Stat(ociimage.DefaultBusybox); err != nil {
		testenv.SkipOrFail(t, "busybox-static missing: %v", err)
	}
	var buf bytes.Buffer
	if err := ociimage.Build(&buf, testImage, ociimage.WithFile("/var/www/index.html", []byte(indexHTML), 0o644)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// node is one runtime on the test's containerd, with the test image loaded.
type node struct {
	id       string
	rt       *Runtime
	address  string
	stateDir string
}

// newNode starts a runtime for nodeID on d, keeping its state under the
// daemon's dir (so the daemon's cleanup unmounts leftovers).
func newNode(t *testing.T, d *containerdtest.Daemon, nodeID string, opts ...Option) *node {
	t.Helper()
	n := &node{id: nodeID, address: d.Address(), stateDir: filepath.Join(d.Dir(), "node-"+nodeID)}
	n.rt = n.open(t, opts...)
	// Bridges outlive their containers (as on a real node); drop this
	// one with the test so a later node may take the same subnet.
	t.Cleanup(func() {
		if out, err := osexec.Command("ip", "link", "del", n.rt.Names().Bridge).CombinedOutput(); err != nil && !strings.Contains(string(out), "Cannot find") {
			t.Logf("delete bridge %s: %v: %s", n.rt.Names().Bridge, err, out)
		}
	})
	names, err := n.rt.LoadImage(context.Background(), bytes.NewReader(testArchive(t)))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0] != testImage {
		t.Fatalf("LoadImage = %v, want [%s]", names, testImage)
	}
	return n
}

// open makes a fresh Runtime for the node (as a restarted agent would).
func (n *node) open(t *testing.T, opts ...Option) *Runtime {
	t.Helper()
	rt, err := New(context.Background(), n.address, append([]Option{WithNodeID(n.id), WithStateDir(n.stateDir)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// replica describes a replica of service "web" slot 1 running spec.
func replica(t *testing.T, nodeID, taskID string, spec *api.ServiceSpec) exec.Replica {
	if spec.Image == "" {
		spec.Image = testImage
	}
	return exec.Replica{
		Task:     &api.Task{Id: taskID, ServiceName: "web", Slot: 1, Spec: spec},
		NodeID:   nodeID,
		NodeName: "host-" + nodeID,
		Dir:      t.TempDir(),
		LogPath:  filepath.Join(t.TempDir(), "logs", "replica.log"),
	}
}

// start prepares and starts rep on rt and removes it when t ends.
func start(t *testing.T, rt *Runtime, rep exec.Replica) exec.Controller {
	t.Helper()
	c, err := rt.Controller(rep)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Prepare(ctx); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.Remove(ctx); err != nil {
			t.Errorf("remove: %v", err)
		}
	})
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	return c
}

// waitLog waits until the replica's log holds want.
func waitLog(t *testing.T, rep exec.Replica, want string) {
	t.Helper()
	waitfor.Holds(t, 20*time.Second, "log line "+want, func() (bool, string) {
		b, err := os.ReadFile(rep.LogPath)
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(string(b), want), string(b)
	})
}

// wait waits (bounded) for the replica to end.
func wait(t *testing.T, c exec.Controller) exec.Exit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := c.Wait(ctx)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return e
}

// freePort asks the kernel for a TCP port nothing listens on now.
func freePort(t *testing.T) uint32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return uint32(l.Addr().(*net.TCPAddr).Port)
}

// cgroupValue reads a limit of the process pid from the host's cgroup
// tree: the v1 file under the controller's hierarchy when there is one,
// else the v2 file in the unified hierarchy.
func cgroupValue(t *testing.T, pid uint32, controller, v1File, v2File string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	var unified string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			unified = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == controller {
				v, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", controller, f[2], v1File))
				if err != nil {
					t.Fatal(err)
				}
				return strings.TrimSpace(string(v))
			}
		}
	}
	v, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", unified, v2File))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(v))
}
