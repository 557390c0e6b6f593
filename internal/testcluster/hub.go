package testcluster

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
)

// JacodPort is where a daemon on a host listens. Fixed, because each host
// has a namespace and an address of its own: nothing else can hold it.
const JacodPort = 7000

// maxHosts bounds a hub's address pool, 198.18.0.1-126: hosts take the
// lower half of the /24, and a node's container subnets come from the
// upper half, which the runtime refuses to overlap.
const maxHosts = 126

// hubSeq numbers the hubs of this process.
var hubSeq atomic.Int64

// Hub is one network: a namespace holding a bridge that every host of the
// hub is plugged into. Each caller (a test, a chaos run) has its own hub,
// so two hubs' hosts may share an address without ever seeing each other.
type Hub struct {
	name string

	mu     sync.Mutex
	last   int // last host number handed out, 198.18.0.<last>
	hosts  []*Host
	closed bool
}

// NewHub creates a hub. Close deletes it and its hosts; on error nothing
// of it is left.
func NewHub(ctx context.Context) (_ *Hub, err error) {
	if err := Available(); err != nil {
		return nil, err
	}
	h := &Hub{name: runPrefix + strconv.FormatInt(hubSeq.Add(1), 10)}
	if err := ipCmd(ctx, "netns", "add", h.name); err != nil {
		return nil, fmt.Errorf("create hub: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, deleteNetns(context.WithoutCancel(ctx), h.name))
		}
	}()
	for _, args := range [][]string{
		{"-n", h.name, "link", "set", "lo", "up"},
		{"-n", h.name, "link", "add", "br0", "type", "bridge"},
		{"-n", h.name, "link", "set", "br0", "up"},
	} {
		if err := ipCmd(ctx, args...); err != nil {
			return nil, fmt.Errorf("create hub %s: %w", h.name, err)
		}
	}
	return h, nil
}

// Name is the hub's namespace; its hosts' are named after it.
func (h *Hub) Name() string { return h.name }

// next hands out the next host number of the pool.
func (h *Hub) next() (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return 0, fmt.Errorf("hub %s is closed", h.name)
	}
	if h.last >= maxHosts {
		return 0, fmt.Errorf("hub %s: address pool 198.18.0.1-%d exhausted", h.name, maxHosts)
	}
	h.last++
	return h.last, nil
}

// SpareIP hands out the next address of the pool without a host: a
// second address for a host that moves (docs/adr/0038).
func (h *Hub) SpareIP() (string, error) {
	n, err := h.next()
	if err != nil {
		return "", err
	}
	return hostIP(n), nil
}

func hostIP(n int) string { return "198.18.0." + strconv.Itoa(n) }

// Host is one machine of a hub: a namespace with loopback and eth0 at
// 198.18.0.<n>/25, the other end of eth0 on the hub's bridge.
type Host struct {
	hub    *Hub
	name   string
	n      int
	ip     string
	closed bool // guarded by hub.mu
}

// AddHost plugs a new host into the hub, with the next free address of
// the pool. Close (the host's or the hub's) deletes it; on error nothing
// of it is left.
func (h *Hub) AddHost(ctx context.Context) (_ *Host, err error) {
	n, err := h.next()
	if err != nil {
		return nil, err
	}
	hs := &Host{hub: h, name: fmt.Sprintf("%s-h%d", h.name, n), n: n, ip: hostIP(n)}
	if err := ipCmd(ctx, "netns", "add", hs.name); err != nil {
		return nil, fmt.Errorf("create host: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, deleteNetns(context.WithoutCancel(ctx), hs.name))
		}
	}()
	// The pair is created inside the hub with its peer end straight in
	// the host's namespace, so neither end ever exists in the root
	// namespace (where names could collide with other runs' or Docker's).
	port := "p" + strconv.Itoa(n)
	for _, args := range [][]string{
		{"-n", h.name, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", hs.name},
		{"-n", h.name, "link", "set", port, "master", "br0", "up"},
		{"-n", hs.name, "link", "set", "lo", "up"},
		{"-n", hs.name, "addr", "add", hs.ip + "/25", "dev", "eth0"},
		{"-n", hs.name, "link", "set", "eth0", "up"},
	} {
		if err := ipCmd(ctx, args...); err != nil {
			return nil, fmt.Errorf("create host %s: %w", hs.name, err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, fmt.Errorf("hub %s closed while host %s was made", h.name, hs.name)
	}
	h.hosts = append(h.hosts, hs)
	return hs, nil
}

// Close deletes every host of the hub not closed yet, then the hub. The
// processes in them must be gone first. Closing twice does nothing.
func (h *Hub) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	var open []*Host
	for _, hs := range h.hosts {
		if !hs.closed {
			hs.closed = true
			open = append(open, hs)
		}
	}
	h.mu.Unlock()
	var errs []error
	for _, hs := range open {
		errs = append(errs, deleteNetns(ctx, hs.name))
	}
	return errors.Join(append(errs, deleteNetns(ctx, h.name))...)
}

// Name is the host's namespace.
func (hs *Host) Name() string { return hs.name }

// Path is the host's namespace file, for nsenter --net or setns(2).
func (hs *Host) Path() string { return netnsDir + hs.name }

// Number is the host's number within its hub: 198.18.0.<Number>.
func (hs *Host) Number() int { return hs.n }

// IP is the host's first address, 198.18.0.<Number>.
func (hs *Host) IP() string { return hs.ip }

// JacodAddr is where a daemon on the host listens: its IP, JacodPort.
func (hs *Host) JacodAddr() string { return hs.ip + ":" + strconv.Itoa(JacodPort) }

// Close deletes the host's namespace, its end of the link with it; the
// processes in it must be gone first. Closing twice does nothing.
func (hs *Host) Close(ctx context.Context) error {
	hs.hub.mu.Lock()
	done := hs.closed
	hs.closed = true
	hs.hub.mu.Unlock()
	if done {
		return nil
	}
	return deleteNetns(ctx, hs.name)
}

// RunIP runs `ip -n <host> args...`: a change to the host's addresses or
// routes (a host given a new address, docs/adr/0038).
func (hs *Host) RunIP(ctx context.Context, args ...string) error {
	return ipCmd(ctx, append([]string{"-n", hs.name}, args...)...)
}

// Command is a command run inside the host's namespace (`ip netns exec`):
// the only way a caller sends anything to a 198.18.0.x address.
func (hs *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", hs.name, name}, args...)...)
}
