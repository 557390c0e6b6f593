package netrules

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	osexec "os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jaco-project/jaco/internal/testenv"
)

func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "nftables and network namespaces need root")
	}
}

// netns is a named network namespace the test made (ip netns add).
type netns string

// newNetns makes a namespace with lo up and removes it when t ends.
func newNetns(t testing.TB, name string) netns {
	t.Helper()
	n := netns(fmt.Sprintf("jnr%d-%s", os.Getpid(), name))
	ip(t, "netns", "add", string(n))
	t.Cleanup(func() {
		if out, err := osexec.Command("ip", "netns", "del", string(n)).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", n, err, out)
		}
	})
	n.ip(t, "link", "set", "lo", "up")
	return n
}

func ip(t testing.TB, args ...string) {
	t.Helper()
	if out, err := osexec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// ip runs `ip -n n args...`.
func (n netns) ip(t testing.TB, args ...string) {
	t.Helper()
	ip(t, append([]string{"-n", string(n)}, args...)...)
}

// do runs fn on a thread moved into n: sockets fn opens (nftables'
// netlink socket included) and /proc/sys/net files it reads belong to n.
// The thread is never given back to the runtime: it ends with its
// goroutine, so no other goroutine ever runs in n by accident.
func (n netns) do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked, on purpose
		f, err := os.Open("/run/netns/" + string(n))
		if err != nil {
			errc <- err
			return
		}
		err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
		f.Close()
		if err != nil {
			errc <- fmt.Errorf("setns %s: %w", n, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

func (n netns) must(t testing.TB, fn func() error) {
	t.Helper()
	if err := n.do(fn); err != nil {
		t.Fatalf("in %s: %v", n, err)
	}
}

func (n netns) sysctl(t testing.TB, path, value string) {
	t.Helper()
	n.must(t, func() error { return os.WriteFile(path, []byte(value+"\n"), 0o644) })
}

func (n netns) readSysctl(t testing.TB, path string) string {
	t.Helper()
	var v string
	n.must(t, func() error {
		b, err := os.ReadFile(path)
		v = strings.TrimSpace(string(b))
		return err
	})
	return v
}

// port is where every replica's servers listen, TCP and UDP.
const port = "7000"

// serve runs, in n, a TCP and a UDP server on port that answer every
// connection or datagram with name and the source address they see,
// until t ends.
func (n netns) serve(t testing.TB, name string) {
	t.Helper()
	var ln net.Listener
	var pc net.PacketConn
	n.must(t, func() (err error) {
		if ln, err = net.Listen("tcp4", ":"+port); err != nil {
			return err
		}
		pc, err = net.ListenPacket("udp4", ":"+port)
		return err
	})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		pc.Close()
		wg.Wait()
	})
	wg.Add(2)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			from, _ := netip.ParseAddrPort(c.RemoteAddr().String())
			c.Write([]byte(name + " " + from.Addr().String()))
			c.Close()
		}
	}()
	go func() {
		defer wg.Done()
		buf := make([]byte, 64)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			src, _ := netip.ParseAddrPort(from.String())
			pc.WriteTo([]byte(name+" "+src.Addr().String()), from)
		}
	}()
}

// answer is what a server said: who it is and whom it saw.
type answer struct{ name, from string }

// ask connects from n to addr:port over network ("tcp4" or "udp4") and
// returns the server's answer. An addr with its own port (host:port)
// keeps it.
func (n netns) ask(network, addr string, timeout time.Duration) (answer, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, port)
	}
	var said string
	err := n.do(func() error {
		c, err := net.DialTimeout(network, addr, timeout)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(timeout))
		if network == "udp4" {
			if _, err := c.Write([]byte("who")); err != nil {
				return err
			}
			buf := make([]byte, 64)
			k, err := c.Read(buf)
			said = string(buf[:k])
			return err
		}
		b, err := io.ReadAll(c)
		said = string(b)
		return err
	})
	name, from, _ := strings.Cut(said, " ")
	return answer{name, from}, err
}

// timedOut reports whether err is a dial or read that got no answer.
func timedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
