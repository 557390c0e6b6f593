package integration

// Helpers of the service-network tests: what a replica sees, asked from
// inside its own network namespace as it would ask itself.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/pkg/namespaces"
	mdns "github.com/miekg/dns"
	"golang.org/x/sys/unix"

	ctrd "github.com/jaco-project/jaco/agent/exec/containerd"
)

// testOverlayPool is the overlay pool of the container tests' clusters:
// inside the benchmarking range, apart from the hosts (198.18.0.0/24).
const testOverlayPool = "198.19.0.0/16"

// netnsOf is the path of replica id's network namespace on node name, as
// its container's spec names it.
func (c *ccluster) netnsOf(name, id string) (string, error) {
	names, err := ctrd.NamesFor(c.nodeIDs[name], "")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(namespaces.WithNamespace(context.Background(), names.Namespace), 10*time.Second)
	defer cancel()
	ct, err := c.client.LoadContainer(ctx, id)
	if err != nil {
		return "", fmt.Errorf("container %s on %s: %w", id, name, err)
	}
	spec, err := ct.Spec(ctx)
	if err != nil {
		return "", fmt.Errorf("spec of %s on %s: %w", id, name, err)
	}
	for _, ns := range spec.Linux.Namespaces {
		if ns.Type == "network" && ns.Path != "" {
			return ns.Path, nil
		}
	}
	return "", fmt.Errorf("container %s on %s has no network namespace path", id, name)
}

// resolvConfOf is replica id's /etc/resolv.conf, read through its root.
func (c *ccluster) resolvConfOf(name, id string) (string, error) {
	pid, err := c.runningPid(name, id)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/root/etc/resolv.conf", pid))
	return string(b), err
}

// nameserver is the first nameserver line of a resolv.conf.
func nameserver(resolvConf string) (string, error) {
	for _, l := range strings.Split(resolvConf, "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "nameserver" {
			return net.JoinHostPort(f[1], "53"), nil
		}
	}
	return "", fmt.Errorf("no nameserver in %q", resolvConf)
}

// lookupIn asks server for name's A records from inside the namespace at
// nsPath; rcode is the answer's code (NXDOMAIN for a name not seen).
func lookupIn(nsPath, server, name string) (addrs []string, rcode int, err error) {
	q := new(mdns.Msg)
	q.SetQuestion(mdns.Fqdn(name), mdns.TypeA)
	var r *mdns.Msg
	err = inNetns(nsPath, func() (err error) {
		cl := &mdns.Client{Timeout: 2 * time.Second}
		r, _, err = cl.Exchange(q, server)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("ask %s for %s: %w", server, name, err)
	}
	for _, a := range r.Answer {
		if rec, ok := a.(*mdns.A); ok {
			addrs = append(addrs, rec.A.String())
		}
	}
	return addrs, r.Rcode, nil
}

// getIn GETs http://addr/path from inside the namespace at nsPath over a
// new connection and returns the body of a 200 answer, trimmed.
func getIn(nsPath, addr, path string, timeout time.Duration) (string, error) {
	body, err := getBody(nsPath, addr, path, timeout)
	return strings.TrimSpace(body), err
}

// getBody GETs http://addr/path from inside the namespace at nsPath over
// a new connection and returns the body of a 200 answer.
func getBody(nsPath, addr, path string, timeout time.Duration) (string, error) {
	conn, err := dialIn(nsPath, addr, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return "", err
	}
	req.Close = true
	if err := req.Write(conn); err != nil {
		return "", fmt.Errorf("send request to %s: %w", addr, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return "", fmt.Errorf("read answer of %s: %w", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("read answer of %s: %w", addr, err)
	}
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("GET %s%s: %s", addr, path, resp.Status)
	}
	return string(body), nil
}

// wireCapture records every frame crossing one host's underlay link, as
// tcpdump on its eth0 would.
type wireCapture struct {
	fd   int
	wg   sync.WaitGroup
	stop chan struct{}

	mu        sync.Mutex
	frames    int
	wireGuard int // UDP frames to or from the overlay port
	buf       bytes.Buffer
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// captureOn starts capturing on hs's eth0. (Not on the hub's bridge: a
// packet socket on a bridge sees only frames for the bridge itself, not
// those it forwards between hosts.)
func captureOn(hs *host) (*wireCapture, error) {
	var fd int
	err := inNetns("/var/run/netns/"+hs.ns, func() (err error) {
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index})
	})
	if err != nil {
		if fd > 0 {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("capture on %s: %w", hs.ns, err)
	}
	tv := unix.NsecToTimeval((50 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, err
	}
	c := &wireCapture{fd: fd, stop: make(chan struct{})}
	c.wg.Go(c.read)
	return c, nil
}

func (c *wireCapture) read() {
	b := make([]byte, 65536)
	for {
		select {
		case <-c.stop:
			return
		default:
		}
		n, _, err := unix.Recvfrom(c.fd, b, 0)
		if err != nil || n <= 0 {
			continue
		}
		c.mu.Lock()
		c.frames++
		// Ethernet (14) + IPv4 without options (20): UDP ports at 34.
		if n > 38 && b[12] == 0x08 && b[13] == 0 && b[23] == unix.IPPROTO_UDP {
			sport, dport := int(b[34])<<8|int(b[35]), int(b[36])<<8|int(b[37])
			if sport == 51871 || dport == 51871 {
				c.wireGuard++
			}
		}
		if c.buf.Len() < 64<<20 {
			c.buf.Write(b[:n])
		}
		c.mu.Unlock()
	}
}

// finish stops the capture and says whether marker crossed the wire in
// clear, and how many WireGuard frames did.
func (c *wireCapture) finish(marker string) (sawMarker bool, frames, wireGuard int) {
	close(c.stop)
	c.wg.Wait()
	unix.Close(c.fd)
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Contains(c.buf.Bytes(), []byte(marker)), c.frames, c.wireGuard
}
