package netrules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"
)

// Sysctls the rules need, as seen from the caller's network namespace.
const (
	// IPForwardSysctl lets the node route between its bridges and jaco0.
	IPForwardSysctl = "/proc/sys/net/ipv4/ip_forward"
	// BridgeNetfilterSysctl passes bridged IPv4 frames through the inet
	// hooks (br_netfilter): the separation sees traffic inside a bridge,
	// and conntrack undoes a VIP's DNAT on replies that are bridged.
	BridgeNetfilterSysctl = "/proc/sys/net/bridge/bridge-nf-call-iptables"
)

// Rules is one node's overlay ruleset: the nftables table it owns and
// the state it last loaded. Safe for concurrent use.
type Rules struct {
	table *nftables.Table
	log   *slog.Logger

	mu     sync.Mutex
	loaded *State // normalized; nil before the first Apply and after Close or a failure
}

// Option configures New.
type Option func(*Rules)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(r *Rules) { r.log = l } }

// New returns the rules for table (an nftables table name, unique on the
// node: table inet <table>). Nothing touches the kernel until Apply.
func New(table string, opts ...Option) *Rules {
	r := &Rules{table: &nftables.Table{Family: nftables.TableFamilyINet, Name: table}, log: slog.Default()}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Apply makes the kernel's rules say s. It replaces the whole table in
// one netlink transaction, so no packet sees half a state; connections
// already made to a VIP keep their backend (conntrack), new ones only
// ever see the new backends. When s equals the state last applied and
// the table is still there, Apply sends nothing. Before loading, Apply
// turns on IP forwarding and bridge netfilter in the caller's network
// namespace, or fails saying why it cannot.
func (r *Rules) Apply(ctx context.Context, s State) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	want, err := normalize(s)
	if err != nil {
		return fmt.Errorf("netrules: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.loaded != nil && equal(*r.loaded, want) && r.present() {
		return nil
	}
	r.loaded = nil // unknown until this load succeeds
	for _, sc := range []string{IPForwardSysctl, BridgeNetfilterSysctl} {
		if err := r.enable(sc); err != nil {
			return fmt.Errorf("netrules: %w", err)
		}
	}
	conn, err := nftables.New(nftables.WithSockOptions(forceSendBuffer))
	if err != nil {
		return fmt.Errorf("netrules: nftables: %w", err)
	}
	if err := queueTable(conn, r.table, contentsOf(want), want.Ingress); err != nil {
		return fmt.Errorf("netrules: table inet %s: %w", r.table.Name, err)
	}
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("netrules: load table inet %s: %w", r.table.Name, err)
	}
	r.loaded = &want
	return nil
}

// present reports whether the table is in the kernel (r.mu held). A
// failed look is taken as absent: Apply then loads again.
func (r *Rules) present() bool {
	conn, err := nftables.New()
	if err != nil {
		return false
	}
	_, err = conn.ListTableOfFamily(r.table.Name, r.table.Family)
	return err == nil
}

// Close deletes the table; a missing table is not an error. A later
// Apply loads it again.
func (r *Rules) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.loaded = nil
	conn, err := nftables.New()
	if err != nil {
		return fmt.Errorf("netrules: nftables: %w", err)
	}
	conn.DelTable(r.table)
	if err := conn.Flush(); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("netrules: delete table inet %s: %w", r.table.Name, err)
	}
	return nil
}

// sendBuffer bounds the one netlink batch that carries a whole state:
// about 30 bytes a set element, so room for some 500 000 (a full state
// of 2 000 VIPs × 10 backends is about 2 MiB). The default socket buffer
// (wmem_default, often 208 KiB) fits only some 5 000 and would make the
// replacement fail rather than split it, which would not be atomic.
const sendBuffer = 16 << 20

// forceSendBuffer raises the netlink socket's send buffer past wmem_max
// (SO_SNDBUFFORCE; CAP_NET_ADMIN, which loading rules needs anyway). It
// is generic only so that this package need not import the netlink
// package nftables uses (its socket is a *netlink.Conn).
func forceSendBuffer[C interface {
	SyscallConn() (syscall.RawConn, error)
}](c C) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("netlink socket: %w", err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, sendBuffer)
	}); err != nil {
		return fmt.Errorf("netlink socket: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("netlink socket send buffer: %w", serr)
	}
	return nil
}

// enable turns a boolean sysctl on, saying so in the log.
func (r *Rules) enable(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && path == BridgeNetfilterSysctl {
		return fmt.Errorf("bridge netfilter unavailable (%s missing; load the br_netfilter module)", path)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if strings.TrimSpace(string(b)) == "1" {
		return nil
	}
	if err := os.WriteFile(path, []byte("1\n"), 0o644); err != nil {
		return fmt.Errorf("turn on %s: %w", path, err)
	}
	r.log.Info("turned on a sysctl the overlay rules need", "sysctl", path)
	return nil
}
