package integration

// The multi-host harness (docs/design.md §14): every jacod runs in its own
// network namespace, a "host", whose veth pair ends on a Linux bridge in a
// per-test "hub" namespace. Test hosts get addresses from 198.18.0.0/24, a
// range reserved for benchmarking and never routed, and are dialled only
// from inside namespaces: the root namespace never gets an interface, route
// or packet of theirs. The CLI reaches a daemon through its unix socket,
// which needs no network at all.
//
// The bridge lives in the hub namespace rather than the root one because a
// Docker engine on the machine sets the root namespace's FORWARD policy to
// DROP for bridged traffic. Partitions are nftables drop rules inside a
// host's namespace; a pause is SIGSTOP (the kernel has no netem).

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jaco-project/jaco/internal/testenv"
)

// jacodPort is where every test daemon listens. Fixed, because each daemon
// has a namespace (and an address) of its own: nothing else can hold it.
const jacodPort = 7000

// nsPrefix starts the name of every namespace this package creates, so
// leftovers are recognisable and never confused with anyone else's.
const nsPrefix = "jacotest-"

// netnsRun names this test process's namespaces: the pid tells a later run
// whether the run that made them is still alive (see sweepStaleNetns), and
// the random part keeps two runs apart even if they share a pid (separate
// pid namespaces sharing /run/netns).
var netnsRun = func() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s%d-%s-", nsPrefix, os.Getpid(), hex.EncodeToString(b))
}()

// hubSeq numbers the hubs of this run.
var hubSeq atomic.Int64

var (
	netnsOnce    sync.Once
	netnsSkipMsg string // why the suite cannot run here; "" when it can
)

// requireNetns skips t when this machine cannot run the multi-host suite:
// only when we are not root or `ip netns` does not work. Anything else that
// goes wrong later (creating a namespace, nft) fails the test instead,
// because CI, where we are root, must run these tests, not skip them.
func requireNetns(t *testing.T) {
	t.Helper()
	netnsOnce.Do(func() {
		if os.Geteuid() != 0 {
			netnsSkipMsg = "multi-host tests need root (network namespaces); run as root, as CI does"
			return
		}
		if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err != nil {
			netnsSkipMsg = fmt.Sprintf("multi-host tests need iproute2's `ip netns` (apt-get install iproute2): %v %s", err, out)
			return
		}
		sweepStaleNetns()
	})
	if netnsSkipMsg != "" {
		testenv.SkipOrFail(t, "%s", netnsSkipMsg)
	}
}

// staleName matches the namespaces of a run of this package, capturing the
// pid of the test process that made them.
var staleName = regexp.MustCompile(`^` + regexp.QuoteMeta(nsPrefix) + `(\d+)-[0-9a-f]{6}-`)

// sweepStaleNetns deletes the namespaces left by earlier runs that died
// without their cleanups (a `go test -timeout` panic, a SIGKILL): only
// names of this package whose test process is gone. Their daemons died with
// that process (Pdeathsig), so the namespaces hold nothing but interfaces.
// A run any of whose namespaces still holds a process is left alone
// entirely: it may be alive in a pid namespace we cannot see.
func sweepStaleNetns() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	runs := make(map[string][]string) // run prefix -> its namespaces
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		m := staleName.FindStringSubmatch(name)
		if m == nil || m[0] == netnsRun {
			continue
		}
		if _, err := os.Stat("/proc/" + m[1]); err == nil {
			continue // that run is still going (or its pid was reused: leave it)
		}
		runs[m[0]] = append(runs[m[0]], name)
	}
	for _, names := range runs {
		if slices.ContainsFunc(names, func(ns string) bool {
			pids, _ := exec.Command("ip", "netns", "pids", ns).Output()
			return len(strings.TrimSpace(string(pids))) > 0
		}) {
			continue
		}
		for _, ns := range names {
			_ = exec.Command("ip", "netns", "delete", ns).Run()
		}
	}
}

// ipCmd runs `ip args...` (in the root namespace: managing namespaces and
// links, never dialling) and fails t with its output if it fails.
func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// hub is one test's network: a namespace holding a bridge that every host
// of the test is plugged into. Each test has its own hub, so two tests'
// hosts may share an address without ever seeing each other.
type hub struct {
	ns     string // the hub's namespace; hosts are named after it
	mu     sync.Mutex
	lastIP int // last host number handed out, 198.18.0.<lastIP>
}

// newHub creates a hub whose namespace and everything in it is deleted when
// t ends, pass or fail.
func newHub(t *testing.T) *hub {
	t.Helper()
	requireNetns(t)
	h := &hub{ns: fmt.Sprintf("%s%d", netnsRun, hubSeq.Add(1))}
	ipCmd(t, "netns", "add", h.ns)
	// Registered before any host's, so it runs after all of them (cleanups
	// run last-in first-out): the daemons are gone before the wiring is.
	t.Cleanup(func() { deleteNetns(t, h.ns) })
	ipCmd(t, "-n", h.ns, "link", "set", "lo", "up")
	ipCmd(t, "-n", h.ns, "link", "add", "br0", "type", "bridge")
	ipCmd(t, "-n", h.ns, "link", "set", "br0", "up")
	return h
}

// deleteNetns deletes a namespace; its interfaces (veth ends, the bridge,
// nftables tables) go with it.
func deleteNetns(t *testing.T, ns string) {
	t.Helper()
	if out, err := exec.Command("ip", "netns", "delete", ns).CombinedOutput(); err != nil {
		t.Errorf("delete network namespace %s: %v %s", ns, err, out)
	}
}

// host is one test machine: a namespace with loopback and eth0 at
// 198.18.0.<n>/24, the other end of eth0 on the hub's bridge.
type host struct {
	ns string
	n  int    // host number within the hub
	ip string // 198.18.0.<n>
}

// addHost plugs a new host into the hub, with the next free address of
// this hub's pool. Its namespace is deleted when t ends.
func (h *hub) addHost(t *testing.T) *host {
	t.Helper()
	h.mu.Lock()
	if h.lastIP >= 126 {
		h.mu.Unlock()
		t.Fatal("hub address pool 198.18.0.1-126 exhausted")
	}
	h.lastIP++
	hs := &host{n: h.lastIP, ip: fmt.Sprintf("198.18.0.%d", h.lastIP)}
	hs.ns = fmt.Sprintf("%s-h%d", h.ns, hs.n)
	h.mu.Unlock()

	ipCmd(t, "netns", "add", hs.ns)
	t.Cleanup(func() { deleteNetns(t, hs.ns) })
	// The pair is created inside the hub namespace with its peer end
	// straight in the host's, so neither end ever exists in the root
	// namespace (where names could collide with other runs' or Docker's).
	port := fmt.Sprintf("p%d", hs.n)
	ipCmd(t, "-n", h.ns, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", hs.ns)
	ipCmd(t, "-n", h.ns, "link", "set", port, "master", "br0", "up")
	ipCmd(t, "-n", hs.ns, "link", "set", "lo", "up")
	// Hosts take the lower half of the /24; a node's container subnets
	// come from the upper half, and the runtime refuses an overlap.
	ipCmd(t, "-n", hs.ns, "addr", "add", hs.ip+"/25", "dev", "eth0")
	ipCmd(t, "-n", hs.ns, "link", "set", "eth0", "up")
	return hs
}

// addr is the host's jacod address.
func (hs *host) addr() string { return fmt.Sprintf("%s:%d", hs.ip, jacodPort) }

// exec runs a command inside the host's namespace; this is the only way
// the tests send anything to a 198.18.0.x address.
func (hs *host) exec(env []string, args ...string) result {
	return run("ip", env, append([]string{"netns", "exec", hs.ns}, args...)...)
}

// nftTable is the nftables table the partition rules live in, inside a
// host's namespace (never the root namespace's ruleset).
const nftTable = "jacotest"

// partition makes hs drop every packet to or from the given hosts, as a
// broken link between them would: nothing is refused, it just never
// arrives. It replaces an earlier partition of hs. Dropping on one side is
// enough to cut both directions of every connection.
func (hs *host) partition(t *testing.T, from ...*host) {
	t.Helper()
	if len(from) == 0 {
		t.Fatal("partition: no hosts to cut off")
	}
	ips := make([]string, len(from))
	for i, o := range from {
		ips[i] = o.ip
	}
	// One nft transaction: create-if-missing, delete, create anew, so a
	// second partition replaces the first atomically.
	ruleset := fmt.Sprintf(`table inet %[1]s
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
`, nftTable, strings.Join(ips, ", "))
	hs.nft(t, ruleset)
}

// heal removes hs's partition, if any.
func (hs *host) heal(t *testing.T) {
	t.Helper()
	hs.nft(t, fmt.Sprintf("table inet %[1]s\ndelete table inet %[1]s\n", nftTable))
}

func (hs *host) nft(t *testing.T, ruleset string) {
	t.Helper()
	if _, err := exec.LookPath("nft"); err != nil {
		t.Fatal("partitions need nftables' nft (apt-get install nftables; scripts/test.sh installs it)")
	}
	f := filepath.Join(t.TempDir(), "ruleset.nft")
	if err := os.WriteFile(f, []byte(ruleset), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := hs.exec(nil, "nft", "-f", f); r.err() != nil {
		t.Fatalf("nft in %s: %v\nruleset:\n%s", hs.ns, r.err(), ruleset)
	}
}

// nsDaemon is a jacod running inside a host's namespace, listening on
// 198.18.0.<n>:7000 and advertising it. Like the loopback harness's daemon
// it survives kill and restart with the same data dir and address, so it
// is the same node to its cluster. Methods that can fail the test take the
// *testing.T of the caller, since subtests share daemons.
type nsDaemon struct {
	host    *host
	name    string // --node-name
	dir     string // data dir
	flags   []string
	logPath string
	starts  int

	cmd     *exec.Cmd
	exited  chan struct{} // closed once cmd has been waited for
	waitErr error         // cmd.Wait's error, set before exited is closed
	paused  bool
	// ended is set when the test ends the process (kill, stop) or lets
	// it exit (allowExit, expectExit). A daemon that exits otherwise has
	// crashed, and its test fails even if no assertion touched it.
	ended bool
	// dropNetAdmin starts jacod without CAP_NET_ADMIN (bounding and
	// inheritable sets, so no exec regains it): a node that cannot load
	// its nftables ruleset. Set between newJacod and start.
	dropNetAdmin bool
}

// startJacod starts jacod named name on hs with a fresh data dir; it is
// stopped when t ends.
func (hs *host) startJacod(t *testing.T, name string, flags ...string) *nsDaemon {
	t.Helper()
	d := hs.newJacod(t, name, flags...)
	d.start(t)
	return d
}

// newJacod is startJacod without the start, for a test that sets up the
// daemon's process (dropNetAdmin) first.
func (hs *host) newJacod(t *testing.T, name string, flags ...string) *nsDaemon {
	t.Helper()
	d := &nsDaemon{
		host:    hs,
		name:    name,
		dir:     t.TempDir(),
		flags:   flags,
		logPath: filepath.Join(t.TempDir(), "jacod.log"),
	}
	// Last registered runs first: stop the process, then show its log if
	// anything failed; both before the namespaces are deleted.
	t.Cleanup(func() { d.dumpLogOnFailure(t) })
	t.Cleanup(func() { d.cleanup(t) })
	return d
}

// addr is the address the daemon listens on and advertises.
func (d *nsDaemon) addr() string { return d.host.addr() }

func (d *nsDaemon) start(t *testing.T) {
	t.Helper()
	d.starts++
	logf, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(logf, "=== integration: start %d of jacod %s in %s at %s\n", d.starts, d.name, d.host.ns, time.Now().Format(time.RFC3339Nano))
	w := &logWatch{file: logf, addr: make(chan string, 1)}
	// nsenter --net, not `ip netns exec`: the latter also gives jacod a
	// mount namespace of its own, and the network namespaces the containerd
	// runtime bind-mounts for replicas must be visible to containerd and
	// runc in the machine's.
	args := []string{"--net=/var/run/netns/" + d.host.ns}
	if d.dropNetAdmin {
		// util-linux's setpriv, which execs jacod in turn: root keeps
		// every other capability across the exec, this one it cannot.
		args = append(args, "setpriv", "--bounding-set=-net_admin", "--inh-caps=-net_admin", "--")
	}
	args = append(append(args, jacodBin,
		"--data-dir", d.dir, "--listen-addr", d.addr(), "--advertise-addr", d.addr(), "--node-name", d.name), d.flags...)
	cmd := exec.Command("nsenter", args...)
	cmd.Env = testEnv()
	cmd.Stdout, cmd.Stderr = w, w
	// If this test process dies without its cleanups (a -timeout panic),
	// the kernel kills the daemon rather than leaving it to run forever.
	// nsenter execs jacod, and the setting survives the exec.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start jacod %s: %v", d.name, err)
	}
	d.cmd, d.exited, d.paused, d.ended = cmd, make(chan struct{}), false, false
	go func(exited chan struct{}) {
		d.waitErr = cmd.Wait()
		logf.Close()
		close(exited)
	}(d.exited)

	select {
	case addr := <-w.addr:
		if addr != d.addr() {
			t.Fatalf("jacod %s listens on %s, asked for %s", d.name, addr, d.addr())
		}
	case <-d.exited:
		t.Fatalf("jacod %s exited before serving: %v\n%s", d.name, d.waitErr, d.log())
	case <-time.After(startTimeout):
		t.Fatalf("jacod %s did not log %q within %v\n%s", d.name, "jacod serving", startTimeout, d.log())
	}
	// The signals the tests send go to this pid: it must be jacod itself
	// (nsenter exec'd it), in the host's namespace.
	if err := d.checkProcess(); err != nil {
		t.Fatal(err)
	}
}

// checkProcess verifies that the pid we hold is jacod, running in the
// host's network namespace.
func (d *nsDaemon) checkProcess() error {
	pid := d.cmd.Process.Pid
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return fmt.Errorf("jacod %s: %v", d.name, err)
	}
	want, err := filepath.EvalSymlinks(jacodBin)
	if err != nil {
		return err
	}
	if exe != want {
		return fmt.Errorf("pid %d of jacod %s runs %s, want %s (did `ip netns exec` not exec?)", pid, d.name, exe, want)
	}
	var got, ns syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &got); err != nil {
		return err
	}
	if err := syscall.Stat("/var/run/netns/"+d.host.ns, &ns); err != nil {
		return err
	}
	if got.Ino != ns.Ino || got.Dev != ns.Dev {
		return fmt.Errorf("jacod %s (pid %d) is not in network namespace %s", d.name, pid, d.host.ns)
	}
	if d.dropNetAdmin {
		has, err := hasCapability(pid, unix.CAP_NET_ADMIN)
		if err != nil {
			return err
		}
		if has {
			return fmt.Errorf("jacod %s (pid %d) has CAP_NET_ADMIN, started without it", d.name, pid)
		}
	}
	return nil
}

// hasCapability reports whether capability bit c is in pid's effective set.
func hasCapability(pid, c int) (bool, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			set, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, fmt.Errorf("CapEff of pid %d: %w", pid, err)
			}
			return set&(1<<c) != 0, nil
		}
	}
	return false, fmt.Errorf("/proc/%d/status has no CapEff line", pid)
}

// running reports whether the process has not exited yet.
func (d *nsDaemon) running() bool {
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

// kill SIGKILLs the daemon, as a crash or power loss would stop it.
func (d *nsDaemon) kill(t *testing.T) {
	t.Helper()
	if !d.running() {
		t.Fatalf("kill: jacod %s is not running", d.name)
	}
	d.ended = true
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.exited
	d.paused = false
}

// pause SIGSTOPs the daemon: it keeps its sockets, so peers see a member
// that accepts connections and never answers, like a hung machine.
func (d *nsDaemon) pause(t *testing.T) {
	t.Helper()
	d.signalAndWait(t, syscall.SIGSTOP, func(state byte) bool { return state == 'T' })
	d.paused = true
}

// resume SIGCONTs a paused daemon.
func (d *nsDaemon) resume(t *testing.T) {
	t.Helper()
	d.signalAndWait(t, syscall.SIGCONT, func(state byte) bool { return state != 'T' })
	d.paused = false
}

// signalAndWait sends sig and waits until the kernel shows the process in a
// state ok accepts, so the test goes on only once the signal has acted.
func (d *nsDaemon) signalAndWait(t *testing.T, sig syscall.Signal, ok func(state byte) bool) {
	t.Helper()
	if !d.running() {
		t.Fatalf("%v: jacod %s is not running", sig, d.name)
	}
	if err := d.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%v jacod %s: %v", sig, d.name, err)
	}
	eventually(t, 5*time.Second, func() error {
		state, err := procState(d.cmd.Process.Pid)
		if err != nil {
			return err
		}
		if !ok(state) {
			return fmt.Errorf("jacod %s is in state %c after %v", d.name, state, sig)
		}
		return nil
	})
}

// procState returns the state letter of /proc/pid/stat (R, S, T, ...).
func procState(pid int) (byte, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// "pid (comm) S ...": comm may hold spaces, so look after the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, b)
	}
	return b[i+2], nil
}

// stop SIGTERMs the daemon (resuming it first if paused) and requires a
// clean exit in time; after stopTimeout it is SIGKILLed and t fails.
func (d *nsDaemon) stop(t *testing.T) {
	t.Helper()
	if !d.running() {
		if !d.ended {
			d.ended = true // report it once
			t.Errorf("jacod %s exited by itself (%v); see its log", d.name, d.waitErr)
		}
		return
	}
	allowed := d.ended // allowExit: the daemon may be exiting with an error
	d.ended = true
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	if d.paused {
		// A stopped process keeps SIGTERM pending until it runs again.
		_ = d.cmd.Process.Signal(syscall.SIGCONT)
		d.paused = false
	}
	select {
	case <-d.exited:
		if d.waitErr != nil && !allowed {
			t.Errorf("jacod %s exited with %v after SIGTERM, want a clean exit", d.name, d.waitErr)
		}
	case <-time.After(stopTimeout):
		_ = d.cmd.Process.Signal(syscall.SIGKILL)
		<-d.exited
		t.Errorf("jacod %s did not stop within %v of SIGTERM; killed", d.name, stopTimeout)
	}
}

// allowExit tells the harness that the daemon may exit by itself from now
// on, cleanly or not, without that counting as a crash.
func (d *nsDaemon) allowExit() { d.ended = true }

// expectExit waits up to timeout for the daemon to exit by itself, as the
// test expects, and returns how it exited.
func (d *nsDaemon) expectExit(t *testing.T, timeout time.Duration) error {
	t.Helper()
	d.ended = true
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-d.exited:
		return d.waitErr
	case <-timer.C:
		t.Fatalf("jacod %s still runs %v later; want it to exit", d.name, timeout)
		return nil
	}
}

// restart starts a killed or stopped daemon again on its data dir and
// address.
func (d *nsDaemon) restart(t *testing.T) {
	t.Helper()
	d.stop(t)
	d.start(t)
}

func (d *nsDaemon) cleanup(t *testing.T) {
	d.stop(t)
	if strings.Contains(d.log(), raceReport) {
		t.Errorf("jacod %s reported a data race", d.name)
	}
}

func (d *nsDaemon) log() string {
	b, err := os.ReadFile(d.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return string(b)
}

// logTailLines bounds what a failed test prints of each daemon's log: a
// seven-manager test would otherwise print tens of thousands of lines.
const logTailLines = 150

func (d *nsDaemon) dumpLogOnFailure(t *testing.T) {
	if !t.Failed() {
		return
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(d.log()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > logTailLines {
		lines = append([]string{fmt.Sprintf("(... %d earlier lines)", len(lines)-logTailLines)}, lines[len(lines)-logTailLines:]...)
	}
	t.Logf("jacod %s (%s, %s, data dir %s) log:\n%s", d.name, d.host.ns, d.addr(), d.dir, strings.Join(lines, "\n"))
}

// logSince returns what the daemon logged since its latest start.
func (d *nsDaemon) logSince() string {
	l := d.log()
	if i := strings.LastIndex(l, "=== integration: start "); i >= 0 {
		return l[i:]
	}
	return l
}

// jaco runs the CLI against the daemon's unix socket, from the root
// namespace: no network is involved.
func (d *nsDaemon) jaco(args ...string) result {
	return jaco(nil, append([]string{"--data-dir", d.dir}, args...)...)
}

// jacoFrom runs the CLI over TCP against d from inside client's namespace,
// with the operator token.
func (d *nsDaemon) jacoFrom(client *host, token string, args ...string) result {
	return client.exec([]string{"JACO_TOKEN=" + token}, append([]string{jacoBin, "--server", d.addr()}, args...)...)
}

func (d *nsDaemon) tryStatus() (clusterStatus, error) {
	return decode[clusterStatus](d.jaco("cluster", "status", "--format", "json"))
}

func (d *nsDaemon) tryNodes() ([]nodeEntry, error) {
	return decode[[]nodeEntry](d.jaco("node", "ls", "--format", "json"))
}

// write makes one raft write through d (a join token: the cheapest write
// the product has), giving up after timeout.
func (d *nsDaemon) write(timeout time.Duration) error {
	return d.jaco("--timeout", timeout.String(), "node", "issue-join-token", "--role", "worker").err()
}

// joinToken mints a join token for role through d.
func (d *nsDaemon) joinToken(t *testing.T, role string, extra ...string) string {
	t.Helper()
	r := wantOK(t, d.jaco(append([]string{"node", "issue-join-token", "--role", role}, extra...)...))
	return strings.TrimSpace(r.stdout)
}

// join makes d join the cluster through peer with token.
func (d *nsDaemon) join(peer *nsDaemon, token string, extra ...string) result {
	return d.jaco(append(extra, "node", "join", "--peer", peer.addr(), "--token", token)...)
}

// namespaceExists reports whether `ip netns list` shows ns.
func namespaceExists(t *testing.T, ns string) bool {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	return slices.ContainsFunc(strings.Split(string(out), "\n"), func(line string) bool {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		return name == ns
	})
}

// initCluster runs `cluster init --quiet` on d and returns the operator
// token.
func (d *nsDaemon) initCluster(t *testing.T) string {
	t.Helper()
	r := wantOK(t, d.jaco("cluster", "init", "--quiet"))
	tok := strings.TrimSpace(r.stdout)
	if !tokenPattern.MatchString(tok) {
		t.Fatalf("cluster init --quiet on %s printed %q, want a token", d.name, r.stdout)
	}
	return tok
}

// TestNetnsHarness checks the harness itself, so a multi-host test that
// fails can be trusted to have failed in jaco: the pid we signal is jacod
// in its host's namespace, SIGSTOP and SIGCONT act, an nftables partition
// cuts a host off and healing restores it, and everything is gone once
// the test that made it ends.
func TestNetnsHarness(t *testing.T) {
	t.Parallel()
	var namespaces []string
	var d *nsDaemon
	t.Run("host", func(t *testing.T) {
		hb := newHub(t)
		server, client := hb.addHost(t), hb.addHost(t)
		namespaces = []string{hb.ns, server.ns, client.ns}
		d = server.startJacod(t, "server") // start checks pid and namespace
		token := d.initCluster(t)

		reach := func() result { return d.jacoFrom(client, token, "--timeout", "2s", "node", "ls") }
		wantOK(t, reach())
		client.partition(t, server)
		if r := reach(); r.code == 0 {
			t.Fatalf("%s reached %s across a partition", client.ns, d.addr())
		}
		client.heal(t)
		eventually(t, 10*time.Second, func() error { return reach().err() })
		// A partition on the server's side cuts the same link.
		server.partition(t, client)
		if r := reach(); r.code == 0 {
			t.Fatalf("%s reached %s across a partition on the server's side", client.ns, d.addr())
		}
		server.heal(t)
		eventually(t, 10*time.Second, func() error { return reach().err() })

		d.pause(t)
		if r := d.jaco("--timeout", "1s", "cluster", "status"); r.code == 0 {
			t.Fatalf("a SIGSTOPped jacod answered: %s", r.stdout)
		}
		d.resume(t)
		eventually(t, 10*time.Second, func() error { return d.jaco("cluster", "status").err() })
	})
	if t.Failed() {
		return
	}
	if d.running() {
		t.Errorf("jacod (pid %d) still runs after its test ended", d.cmd.Process.Pid)
	}
	for _, ns := range namespaces {
		if namespaceExists(t, ns) {
			t.Errorf("network namespace %s still exists after its test ended", ns)
		}
	}
}

// TestNetnsHubsIsolated: two hubs whose hosts have the same addresses are
// separate networks. From each hub's 198.18.0.1, 198.18.0.2 is that hub's
// own daemon (its own cluster), never the other hub's; this is what lets
// parallel tests reuse addresses.
func TestNetnsHubsIsolated(t *testing.T) {
	t.Parallel()
	type side struct {
		client *host
		d      *nsDaemon
		token  string
	}
	var sides []side
	for _, name := range []string{"a", "b"} {
		hb := newHub(t)
		client, server := hb.addHost(t), hb.addHost(t)
		if client.ip != "198.18.0.1" || server.ip != "198.18.0.2" {
			t.Fatalf("hub %s handed out %s and %s, want 198.18.0.1 and .2", name, client.ip, server.ip)
		}
		d := server.startJacod(t, name)
		sides = append(sides, side{client, d, d.initCluster(t)})
	}
	for i, s := range sides {
		want, err := s.d.tryStatus()
		if err != nil {
			t.Fatal(err)
		}
		got, err := decode[clusterStatus](s.d.jacoFrom(s.client, s.token, "cluster", "status", "--format", "json"))
		if err != nil {
			t.Fatalf("hub %d: status over TCP from %s: %v", i, s.client.ns, err)
		}
		if got.ClusterID != want.ClusterID {
			t.Errorf("hub %d: 198.18.0.2 answers for cluster %s, want its own %s", i, got.ClusterID, want.ClusterID)
		}
		// The other hub's token names the other hub's CA: the daemon this
		// hub reaches at 198.18.0.2 cannot prove it, so the client refuses.
		other := sides[1-i]
		wantError(t, s.d.jacoFrom(s.client, other.token, "--timeout", "3s", "cluster", "status"), 1, "unavailable")
	}
}
