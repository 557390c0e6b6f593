package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
)

// NamespacePrefix starts the name of every network namespace this package
// creates, so leftovers are recognisable.
const NamespacePrefix = "jacochaos-"

// network is one run's hosts: a hub namespace holding a bridge, and one
// namespace per host with eth0 at 198.18.0.<n>/25 plugged into it. The
// bridge lives in a namespace of its own, as in the integration harness,
// so nothing of a run's network ever appears in the root namespace.
type network struct {
	hub   string
	hosts []*host
}

// host is one machine of the run.
type host struct {
	ns string
	ip string
}

// newNetwork creates a hub and n hosts. On error everything created so far
// is deleted.
func newNetwork(ctx context.Context, n int) (_ *network, err error) {
	sweepOnce.Do(func() { sweepStale(ctx) })
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	nw := &network{hub: fmt.Sprintf("%s%d-%s", NamespacePrefix, os.Getpid(), hex.EncodeToString(b))}
	if err := ip(ctx, "netns", "add", nw.hub); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, nw.close(context.WithoutCancel(ctx)))
		}
	}()
	for _, args := range [][]string{
		{"-n", nw.hub, "link", "set", "lo", "up"},
		{"-n", nw.hub, "link", "add", "br0", "type", "bridge"},
		{"-n", nw.hub, "link", "set", "br0", "up"},
	} {
		if err := ip(ctx, args...); err != nil {
			return nil, err
		}
	}
	for i := 1; i <= n; i++ {
		hs := &host{ns: fmt.Sprintf("%s-h%d", nw.hub, i), ip: fmt.Sprintf("198.18.0.%d", i)}
		if err := ip(ctx, "netns", "add", hs.ns); err != nil {
			return nil, err
		}
		nw.hosts = append(nw.hosts, hs)
		port := fmt.Sprintf("p%d", i)
		for _, args := range [][]string{
			// Created in the hub with the peer straight in the host, so
			// neither end ever exists in the root namespace.
			{"-n", nw.hub, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", hs.ns},
			{"-n", nw.hub, "link", "set", port, "master", "br0", "up"},
			{"-n", hs.ns, "link", "set", "lo", "up"},
			{"-n", hs.ns, "addr", "add", hs.ip + "/25", "dev", "eth0"},
			{"-n", hs.ns, "link", "set", "eth0", "up"},
		} {
			if err := ip(ctx, args...); err != nil {
				return nil, err
			}
		}
	}
	return nw, nil
}

var sweepOnce sync.Once

// staleName matches this package's namespaces, capturing the pid of the
// process that made them.
var staleName = regexp.MustCompile(`^` + regexp.QuoteMeta(NamespacePrefix) + `(\d+)-`)

// sweepStale deletes namespaces left by runs that died without cleaning
// up (a test -timeout panic, a SIGKILL): only those whose process is gone
// and that hold no process (their daemons died with the run, Pdeathsig).
func sweepStale(ctx context.Context) {
	out, err := exec.CommandContext(ctx, "ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for line := range strings.Lines(string(out)) {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		m := staleName.FindStringSubmatch(name)
		if m == nil || m[1] == fmt.Sprint(os.Getpid()) {
			continue
		}
		if _, err := os.Stat("/proc/" + m[1]); err == nil {
			continue // still running (or its pid was reused: leave it)
		}
		if pids, _ := exec.CommandContext(ctx, "ip", "netns", "pids", name).Output(); len(strings.TrimSpace(string(pids))) > 0 {
			continue
		}
		_ = ip(ctx, "netns", "delete", name)
	}
}

// close deletes every namespace of the network; the processes in them must
// be gone first.
func (nw *network) close(ctx context.Context) error {
	var errs []error
	for _, hs := range nw.hosts {
		errs = append(errs, ip(ctx, "netns", "delete", hs.ns))
	}
	errs = append(errs, ip(ctx, "netns", "delete", nw.hub))
	return errors.Join(errs...)
}

// ip runs `ip args...` in the root namespace: it manages namespaces and
// links, it never sends a packet.
func ip(ctx context.Context, args ...string) error {
	if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// nftTable holds a host's partition rules, inside its namespace.
const nftTable = "jacochaos"

// cut makes hs drop every packet to or from the given hosts, as a broken
// link would: nothing is refused, it just never arrives. It replaces an
// earlier cut of hs in one nft transaction.
func (hs *host) cut(ctx context.Context, from []*host) error {
	ips := make([]string, len(from))
	for i, o := range from {
		ips[i] = o.ip
	}
	return hs.nft(ctx, fmt.Sprintf(`table inet %[1]s
delete table inet %[1]s
table inet %[1]s {
	set cut {
		type ipv4_addr
		elements = { %[2]s }
	}
	chain input {
		type filter hook input priority filter; policy accept;
		ip saddr @cut drop
	}
	chain output {
		type filter hook output priority filter; policy accept;
		ip daddr @cut drop
	}
}
`, nftTable, strings.Join(ips, ", ")))
}

// heal removes hs's cut, if any.
func (hs *host) heal(ctx context.Context) error {
	return hs.nft(ctx, fmt.Sprintf("table inet %[1]s\ndelete table inet %[1]s\n", nftTable))
}

func (hs *host) nft(ctx context.Context, ruleset string) error {
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", hs.ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(ruleset)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft in %s: %w: %s", hs.ns, err, strings.TrimSpace(string(out)))
	}
	return nil
}
