package overlay

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jaco-project/jaco/internal/syncbuf"
	"github.com/jaco-project/jaco/internal/testenv"
)

// node is one helper process in its own network namespace.
type node struct {
	t       *testing.T
	name    string
	ns      string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	replies chan helperReply
	stderr  *syncbuf.Buffer

	pub  PublicKey
	kind Kind
}

// requireNetns skips (fails under JACO_TEST_STRICT, as in CI) where this
// machine cannot run the test: not root, no iproute2, no TUN device.
func requireNetns(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "overlay tests need root (network namespaces, TUN); run as root, as CI does")
	}
	if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err != nil {
		testenv.SkipOrFail(t, "overlay tests need iproute2's `ip netns` (apt-get install iproute2): %v %s", err, out)
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		testenv.SkipOrFail(t, "overlay tests need /dev/net/tun: %v", err)
	}
}

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// nsPrefix starts this package's namespace names, followed by the test
// process's pid and a random part.
const nsPrefix = "jacoovl"

var (
	staleNS   = regexp.MustCompile(`^` + nsPrefix + `(\d+)-[0-9a-f]{6}-[ab]$`)
	sweepOnce sync.Once
)

// sweepStale deletes namespaces a killed earlier run left behind: those
// whose test process is gone and that hold no process (its helpers die
// with it, Pdeathsig).
func sweepStale() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		m := staleNS.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		if _, err := os.Stat("/proc/" + m[1]); err == nil {
			continue // alive, or a reused pid: leave it
		}
		if pids, _ := exec.Command("ip", "netns", "pids", name).Output(); len(bytes.TrimSpace(pids)) > 0 {
			continue
		}
		_ = exec.Command("ip", "netns", "delete", name).Run()
	}
}

// underlay makes two namespaces joined by a veth pair, eth0 in each, at
// 198.18.0.1/24 and 198.18.0.2/24, deleted when the test ends.
func underlay(t *testing.T) (a, b string) {
	sweepOnce.Do(sweepStale)
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	base := fmt.Sprintf("%s%d-%s", nsPrefix, os.Getpid(), hex.EncodeToString(suffix))
	a, b = base+"-a", base+"-b"
	for _, ns := range []string{a, b} {
		ipCmd(t, "netns", "add", ns)
		t.Cleanup(func() {
			if out, err := exec.Command("ip", "netns", "delete", ns).CombinedOutput(); err != nil {
				t.Errorf("delete namespace %s: %v: %s", ns, err, out)
			}
		})
		ipCmd(t, "-n", ns, "link", "set", "lo", "up")
	}
	ipCmd(t, "-n", a, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", b)
	for i, ns := range []string{a, b} {
		ipCmd(t, "-n", ns, "addr", "add", fmt.Sprintf("198.18.0.%d/24", i+1), "dev", "eth0")
		ipCmd(t, "-n", ns, "link", "set", "eth0", "up")
	}
	return a, b
}

// startNode runs a helper in ns and opens its link of the given kind.
func startNode(t *testing.T, name, ns string, kind Kind) *node {
	n := startHelper(t, name, ns)
	r := n.do(helperCmd{Op: "open", Kind: kind})
	n.pub, n.kind = r.PublicKey, r.Kind
	return n
}

// startHelper runs a helper in ns, stopped when the test ends.
func startHelper(t *testing.T, name, ns string) *node {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	n := &node{t: t, name: name, ns: ns, replies: make(chan helperReply), stderr: &syncbuf.Buffer{}}
	n.cmd = exec.Command("ip", "netns", "exec", ns, exe)
	n.cmd.Env = append(os.Environ(), helperEnv+"=1")
	n.cmd.Stderr = n.stderr
	// `ip netns exec` execs the helper in its own place, so the helper
	// dies with this test process even when it is killed.
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if n.stdin, err = n.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := n.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	readerDone, stop := make(chan struct{}), make(chan struct{})
	go func() { // ends when the helper's stdout closes or the test ends
		defer close(readerDone)
		defer close(n.replies)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var r helperReply
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				r.Err = fmt.Sprintf("bad reply %q: %v", sc.Text(), err)
			}
			select {
			case n.replies <- r:
			case <-stop:
				return
			}
		}
	}()
	// Registered after the namespaces' cleanups, so it runs before them:
	// the helper is gone before its namespace is deleted.
	t.Cleanup(func() {
		close(stop)
		_ = n.cmd.Process.Kill()
		_ = n.cmd.Wait()
		<-readerDone
		if t.Failed() {
			t.Logf("node %s stderr:\n%s", name, n.stderr.String())
		}
	})
	return n
}

// call sends c and returns the reply, failing the test past a deadline.
func (n *node) call(c helperCmd) helperReply {
	n.t.Helper()
	b, _ := json.Marshal(c)
	if _, err := n.stdin.Write(append(b, '\n')); err != nil {
		n.t.Fatalf("node %s: send %s: %v", n.name, c.Op, err)
	}
	select {
	case r, ok := <-n.replies:
		if !ok {
			n.t.Fatalf("node %s: helper exited during %s: %v\n%s", n.name, c.Op, n.cmd.Wait(), n.stderr.String())
		}
		return r
	case <-time.After(2 * time.Minute):
		n.t.Fatalf("node %s: no reply to %s within 2m", n.name, c.Op)
	}
	return helperReply{}
}

// do is call that fails the test on an error reply.
func (n *node) do(c helperCmd) helperReply {
	n.t.Helper()
	r := n.call(c)
	if r.Err != "" {
		n.t.Fatalf("node %s: %s: %s", n.name, c.Op, r.Err)
	}
	return r
}

func (n *node) peers() []PeerStatus {
	n.t.Helper()
	return n.do(helperCmd{Op: "peers"}).Peers
}

// dialUntil dials addr until an echo comes back or the deadline passes:
// the first packets after a (re)configuration start a handshake.
func (n *node) dialUntil(addr, msg string, within time.Duration) (string, error) {
	deadline := time.Now().Add(within)
	for {
		r := n.call(helperCmd{Op: "dial", Addr: addr, Msg: msg, Timeout: 2 * time.Second})
		if r.Err == "" || time.Now().After(deadline) {
			if r.Err != "" {
				return "", fmt.Errorf("%s", r.Err)
			}
			return r.Reply, nil
		}
	}
}

func marker(t *testing.T, what string) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "JACO-" + what + "-" + hex.EncodeToString(b)
}
