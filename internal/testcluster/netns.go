package testcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// NamespacePrefix starts the name of every network namespace this package
// creates, so leftovers are recognisable and never confused with anyone
// else's.
const NamespacePrefix = "jacotest-"

// netnsDir is where `ip netns` keeps its namespaces: what nsenter --net
// and a setns(2) open.
const netnsDir = "/var/run/netns/"

// runPrefix names this process's namespaces: the pid tells a later run
// whether the run that made them is still alive (see sweepStale), and the
// random part keeps two runs apart even if they share a pid (separate pid
// namespaces sharing /run/netns).
var runPrefix = func() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s%d-%s-", NamespacePrefix, os.Getpid(), hex.EncodeToString(b))
}()

// ErrUnavailable is wrapped by Available's error: this machine cannot run
// namespaces at all (not root, no iproute2), as opposed to something that
// failed while creating one. Test callers skip on it, except where the
// run must have everything (internal/testenv).
var ErrUnavailable = errors.New("network namespaces unavailable")

// probeTimeout bounds the `ip` calls of Available and the sweep, made
// once per process whatever context the first caller had.
const probeTimeout = 30 * time.Second

// available probes once per process, then sweeps what dead runs left.
var available = sync.OnceValue(func() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: they need root; run as root, as CI does", ErrUnavailable)
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "ip", "netns", "list").CombinedOutput(); err != nil {
		return fmt.Errorf("%w: they need iproute2's `ip netns` (apt-get install iproute2): %v %s", ErrUnavailable, err, out)
	}
	sweepStale(ctx)
	return nil
})

// Available reports whether this machine can run hubs and hosts: only
// not being root or `ip netns` not working makes it say no (wrapping
// ErrUnavailable). The first call also deletes the namespaces of earlier
// runs that died without cleaning up.
func Available() error { return available() }

// staleName matches the namespaces of any run of this package, capturing
// the pid of the process that made them.
var staleName = regexp.MustCompile(`^` + regexp.QuoteMeta(NamespacePrefix) + `(\d+)-[0-9a-f]{6}-`)

// sweepStale deletes the namespaces left by earlier runs that died
// without their cleanups (a `go test -timeout` panic, a SIGKILL): only
// names of this package whose process is gone. Their daemons died with
// that process (Pdeathsig), so the namespaces hold nothing but
// interfaces. A run any of whose namespaces still holds a process is left
// alone entirely: it may be alive in a pid namespace we cannot see.
func sweepStale(ctx context.Context) {
	out, err := exec.CommandContext(ctx, "ip", "netns", "list").Output()
	if err != nil {
		return
	}
	runs := make(map[string][]string) // run prefix -> its namespaces
	for line := range strings.Lines(string(out)) {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		m := staleName.FindStringSubmatch(name)
		if m == nil || m[0] == runPrefix {
			continue
		}
		if _, err := os.Stat("/proc/" + m[1]); err == nil {
			continue // that run is still going (or its pid was reused: leave it)
		}
		runs[m[0]] = append(runs[m[0]], name)
	}
	for _, names := range runs {
		if slices.ContainsFunc(names, func(ns string) bool {
			pids, _ := exec.CommandContext(ctx, "ip", "netns", "pids", ns).Output()
			return len(strings.TrimSpace(string(pids))) > 0
		}) {
			continue
		}
		for _, ns := range names {
			_ = ipCmd(ctx, "netns", "delete", ns)
		}
	}
}

// ipCmd runs `ip args...` in the root namespace: it manages namespaces
// and links, it never sends a packet.
func ipCmd(ctx context.Context, args ...string) error {
	if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// deleteNetns deletes a namespace; its interfaces (veth ends, the bridge,
// nftables tables) go with it.
func deleteNetns(ctx context.Context, ns string) error {
	if err := ipCmd(ctx, "netns", "delete", ns); err != nil {
		return fmt.Errorf("delete network namespace %s: %w", ns, err)
	}
	return nil
}

// NamespaceExists reports whether `ip netns list` shows ns: what a test
// of a harness checks once everything it made should be gone.
func NamespaceExists(ctx context.Context, ns string) (bool, error) {
	out, err := exec.CommandContext(ctx, "ip", "netns", "list").Output()
	if err != nil {
		return false, fmt.Errorf("ip netns list: %w", err)
	}
	for line := range strings.Lines(string(out)) {
		if name, _, _ := strings.Cut(strings.TrimSpace(line), " "); name == ns {
			return true, nil
		}
	}
	return false, nil
}
