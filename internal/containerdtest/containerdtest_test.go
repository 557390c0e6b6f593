package containerdtest

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/client"
)

// The daemon answers on its own socket, under its own root, and Stop
// leaves no process behind.
func TestStartAnswersAndStops(t *testing.T) {
	d := Start(t)
	if !strings.HasPrefix(d.Address(), "/tmp/") || len(d.Address()) > 100 {
		t.Fatalf("address %q: want a short path under /tmp", d.Address())
	}
	c, err := client.New(d.Address())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v, err := c.Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("containerd %s", v.Version)
	serving, err := c.IsServing(context.Background())
	if err != nil || !serving {
		t.Fatalf("IsServing = %v, %v", serving, err)
	}
	if _, err := os.Stat(d.Dir() + "/root"); err != nil {
		t.Fatalf("root dir: %v", err)
	}
	pid := d.cmd.Process.Pid
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		t.Fatalf("containerd pid %d still there after Stop", pid)
	}
	if _, err := os.Stat(d.Address()); !os.IsNotExist(err) {
		t.Fatalf("socket %s still there after Stop: %v", d.Address(), err)
	}
}

func TestParsePPID(t *testing.T) {
	got, err := parsePPID([]byte("42 (a) b) (c) S 7 42 42 0"))
	if err != nil || got != 7 {
		t.Fatalf("parsePPID = %d, %v; want 7", got, err)
	}
}
