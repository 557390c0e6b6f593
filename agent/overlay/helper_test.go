package overlay

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The netns test runs one node per network namespace, each a copy of this
// test binary started by `ip netns exec` with helperEnv set: TestMain sees
// the variable and serves commands instead of running tests. Commands come
// as JSON lines on stdin, replies go out as JSON lines on stdout. The
// private key is made inside the helper and never crosses the pipe, as it
// never leaves a real node.

const helperEnv = "JACO_OVERLAY_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	os.Exit(m.Run())
}

// wireConfig is Config without the private key.
type wireConfig struct {
	ListenPort int
	Addresses  []netip.Prefix
	Routes     []Route
	Peers      []Peer
}

type helperCmd struct {
	Op      string
	Config  wireConfig
	Addr    string        // listen on or dial
	Msg     string        // sent by dial; the marker capture-stop looks for
	Timeout time.Duration // of a dial
	Iface   string        // captured on
	Bytes   int64         // throughput
	Kind    Kind          // opened
}

type helperReply struct {
	Err       string
	PublicKey PublicKey
	Kind      Kind
	Kernel    bool // KernelAvailable in the helper's namespace
	Peers     []PeerStatus
	Reply     string
	Capture   captureResult
	Mbps      float64
	RTT       [2]time.Duration // p50, p99
	Iface     ifaceState
}

// ifaceState is what the kernel says of the overlay interface.
type ifaceState struct {
	MTU    int
	Up     bool
	Addrs  []string // sorted
	Routes []string // "dst src", only the routes this package marks, sorted
}

// helper is one node's state in its helper process.
type helper struct {
	key  PrivateKey
	link Link

	wg        sync.WaitGroup // every goroutine below
	listeners []net.Listener
	capture   *capture
}

func helperMain() int {
	h := &helper{}
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var c helperCmd
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			fmt.Fprintln(os.Stderr, "helper: bad command:", err)
			return 2
		}
		r := h.do(c)
		if err := out.Encode(r); err != nil {
			fmt.Fprintln(os.Stderr, "helper: reply:", err)
			return 2
		}
		if c.Op == "close" {
			return 0
		}
	}
	h.shutdown() // stdin closed: the parent is gone
	return 1
}

func (h *helper) do(c helperCmd) (r helperReply) {
	ctx := context.Background()
	var err error
	defer func() {
		if err != nil {
			r.Err = err.Error()
		}
	}()
	switch c.Op {
	case "open":
		if h.key, err = GeneratePrivateKey(); err != nil {
			return r
		}
		r.Kernel = KernelAvailable()
		if h.link, err = Open(Options{Kind: c.Kind}); err != nil {
			return r
		}
		r.PublicKey, r.Kind = h.key.PublicKey(), h.link.Kind()
	case "configure":
		err = h.link.Configure(ctx, Config{PrivateKey: h.key, ListenPort: c.Config.ListenPort,
			Addresses: c.Config.Addresses, Routes: c.Config.Routes, Peers: c.Config.Peers})
	case "peers":
		r.Peers, err = h.link.Peers(ctx)
	case "serve":
		err = h.serve(c.Addr)
	case "dial":
		r.Reply, err = dialEcho(c.Addr, c.Msg, c.Timeout)
	case "throughput":
		r.Mbps, err = throughput(c.Addr, c.Bytes)
	case "rtt":
		r.RTT, err = roundTrips(c.Addr, int(c.Bytes))
	case "capture-start":
		h.capture, err = startCapture(c.Iface, &h.wg)
	case "capture-stop":
		r.Capture = h.capture.stop(c.Msg)
	case "inspect":
		r.Iface, err = inspect(DefaultName)
	case "close":
		err = h.shutdown()
	default:
		err = fmt.Errorf("unknown op %q", c.Op)
	}
	return r
}

// shutdown closes everything and checks that the link took its interface
// and its goroutines with it.
func (h *helper) shutdown() error {
	for _, l := range h.listeners {
		l.Close()
	}
	if h.capture != nil {
		h.capture.stop("")
	}
	h.wg.Wait()
	if h.link == nil {
		return nil
	}
	// The goroutine check below can see wireguard-go's goroutines.
	if h.link.Kind() == KindUserspace && wireguardGoroutines() == "" {
		return errors.New("no wireguard goroutines seen while the link is open")
	}
	if err := h.link.Close(); err != nil {
		return err
	}
	if _, err := netlink.LinkByName(DefaultName); err == nil {
		return fmt.Errorf("%s still exists after Close", DefaultName)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := wireguardGoroutines()
		if left == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("wireguard goroutines left after Close:\n%s", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func inspect(name string) (ifaceState, error) {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return ifaceState{}, err
	}
	st := ifaceState{MTU: l.Attrs().MTU, Up: l.Attrs().Flags&net.FlagUp != 0}
	addrs, err := netlink.AddrList(l, unix.AF_INET)
	if err != nil {
		return ifaceState{}, err
	}
	for _, a := range addrs {
		st.Addrs = append(st.Addrs, a.IPNet.String())
	}
	routes, err := netlink.RouteListFiltered(unix.AF_INET, &netlink.Route{LinkIndex: l.Attrs().Index, Protocol: rtprotJaco},
		netlink.RT_FILTER_OIF|netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return ifaceState{}, err
	}
	for _, r := range routes {
		st.Routes = append(st.Routes, r.Dst.String()+" "+r.Src.String())
	}
	slices.Sort(st.Addrs)
	slices.Sort(st.Routes)
	return st, nil
}

// wireguardGoroutines returns the stacks of goroutines running
// wireguard-go code, "" when there are none.
func wireguardGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var left []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "golang.zx2c4.com/wireguard/") {
			left = append(left, g)
		}
	}
	return strings.Join(left, "\n\n")
}

// serve answers each connection on addr: a line gets the line back with
// "/ack" appended; a first line "SINK" makes it read to EOF and answer the
// byte count.
func (h *helper) serve(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	h.listeners = append(h.listeners, l)
	h.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			h.wg.Go(func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(time.Minute))
				br := bufio.NewReader(c)
				line, err := br.ReadString('\n')
				if err != nil {
					return
				}
				line = strings.TrimSuffix(line, "\n")
				if line == "PING" {
					for {
						l, err := br.ReadString('\n')
						if err != nil {
							return
						}
						if _, err := io.WriteString(c, l); err != nil {
							return
						}
					}
				}
				if line == "SINK" {
					n, _ := io.Copy(io.Discard, br)
					fmt.Fprintf(c, "%d\n", n)
					return
				}
				fmt.Fprintf(c, "%s/ack\n", line)
			})
		}
	})
	return nil
}

func dialEcho(addr, msg string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := fmt.Fprintf(c, "%s\n", msg); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSuffix(line, "\n"), err
}

// roundTrips times n one-line exchanges on one connection to a serve
// listener and returns their p50 and p99.
func roundTrips(addr string, n int) ([2]time.Duration, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return [2]time.Duration{}, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(c, "PING\n"); err != nil {
		return [2]time.Duration{}, err
	}
	br := bufio.NewReader(c)
	ds := make([]time.Duration, n)
	for i := range ds {
		start := time.Now()
		if _, err := io.WriteString(c, "x\n"); err != nil {
			return [2]time.Duration{}, err
		}
		if _, err := br.ReadString('\n'); err != nil {
			return [2]time.Duration{}, err
		}
		ds[i] = time.Since(start)
	}
	slices.Sort(ds)
	return [2]time.Duration{ds[n/2], ds[n*99/100]}, nil
}

// throughput sends n bytes to a serve listener and returns Mbit/s.
func throughput(addr string, n int64) (float64, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	start := time.Now()
	if _, err := io.WriteString(c, "SINK\n"); err != nil {
		return 0, err
	}
	buf := make([]byte, 64<<10)
	for sent := int64(0); sent < n; sent += int64(len(buf)) {
		if _, err := c.Write(buf); err != nil {
			return 0, err
		}
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		return 0, err
	}
	var got int64
	if _, err := fmt.Fscan(c, &got); err != nil {
		return 0, err
	}
	if got < n {
		return 0, fmt.Errorf("sink got %d bytes of %d", got, n)
	}
	return float64(got) * 8 / time.Since(start).Seconds() / 1e6, nil
}
