package isolation

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/nftables"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/containerdtest"
	"github.com/jaco-project/jaco/internal/testenv"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(runLoadHelper())
	}
	os.Exit(containerdtest.RunIsolated(m))
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "nftables needs root (CAP_NET_ADMIN)")
	}
}

// fakeSysctl is a bridge netfilter switch the test owns, off.
func fakeSysctl(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "bridge-nf-call-iptables")
	if err := os.WriteFile(p, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// kernelSet reads a set's elements back from the kernel.
func kernelSet(t *testing.T, table, set string) []string {
	t.Helper()
	conn, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	s, err := conn.GetSetByName(&nftables.Table{Family: nftables.TableFamilyINet, Name: table}, set)
	if err != nil {
		t.Fatalf("set %s: %v", set, err)
	}
	els, err := conn.GetSetElements(s)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range els {
		switch len(e.Key) {
		case 4:
			out = append(out, netip.AddrFrom4([4]byte(e.Key)).String())
		case 8:
			out = append(out, netip.AddrFrom4([4]byte(e.Key[:4])).String()+"."+netip.AddrFrom4([4]byte(e.Key[4:])).String())
		}
	}
	slices.Sort(out)
	return out
}

func TestLoadAttachDetachUpdatesKernelSets(t *testing.T) {
	needRoot(t)
	sysctl := fakeSysctl(t)
	r := New("jaco-test", WithBridgeSysctl(sysctl))
	if err := r.Usable(); err == nil {
		t.Fatal("Usable before Load = nil, want not loaded")
	}
	if err := r.Load(); err != nil {
		t.Fatalf("Load: %v", err)
	}
	if b, _ := os.ReadFile(sysctl); strings.TrimSpace(string(b)) != "1" {
		t.Errorf("bridge netfilter switch = %q after Load, want 1", b)
	}
	ctx := context.Background()
	a, b := netip.MustParseAddr("198.18.0.130"), netip.MustParseAddr("198.18.0.131")
	if err := r.Attach(ctx, "a", a, "web", &api.ServiceSpec{DependsOn: []string{"db"}}); err != nil {
		t.Fatal(err)
	}
	if err := r.Attach(ctx, "b", b, "db", &api.ServiceSpec{}); err != nil {
		t.Fatal(err)
	}
	if got, want := kernelSet(t, "jaco-test", setReplicas), []string{"198.18.0.130", "198.18.0.131"}; !slices.Equal(got, want) {
		t.Errorf("replicas = %v, want %v", got, want)
	}
	if got, want := kernelSet(t, "jaco-test", setAllowed), []string{"198.18.0.130.198.18.0.131"}; !slices.Equal(got, want) {
		t.Errorf("allowed = %v, want %v (web may reach db, not back)", got, want)
	}
	if err := r.Detach(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if got, want := kernelSet(t, "jaco-test", setReplicas), []string{"198.18.0.130"}; !slices.Equal(got, want) {
		t.Errorf("replicas after detach = %v, want %v", got, want)
	}
	if got := kernelSet(t, "jaco-test", setAllowed); len(got) != 0 {
		t.Errorf("allowed after detach = %v, want none", got)
	}

	// A restarted jacod loads again over the table it left: the rules are
	// not doubled and the sets survive until its first change.
	r2 := New("jaco-test", WithBridgeSysctl(sysctl))
	if err := r2.Load(); err != nil {
		t.Fatalf("second Load: %v", err)
	}
	conn, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	rules, err := conn.GetRules(r2.rs.table, r2.rs.forward)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 4 {
		t.Errorf("forward chain has %d rules after a second Load, want 4", len(rules))
	}
	if got, want := kernelSet(t, "jaco-test", setReplicas), []string{"198.18.0.130"}; !slices.Equal(got, want) {
		t.Errorf("replicas after a second Load = %v, want %v kept", got, want)
	}
}

// helperEnv makes the test binary run runLoadHelper instead of tests.
const helperEnv = "JACO_ISOLATION_LOAD_HELPER"

// runLoadHelper loads a ruleset and prints Load's error (or "loaded").
func runLoadHelper() int {
	r := New("jaco-helper", WithBridgeSysctl(os.Getenv(helperEnv)))
	if err := r.Load(); err != nil {
		os.Stdout.WriteString(err.Error())
		if !errors.Is(r.Usable(), ErrUnavailable) {
			return 3
		}
		return 2
	}
	os.Stdout.WriteString("loaded")
	return 0
}

// TestLoadWithoutCapNetAdmin runs Load in a user namespace of its own: it
// is root there but holds no CAP_NET_ADMIN over the network namespace,
// as a jacod run without privileges would.
func TestLoadWithoutCapNetAdmin(t *testing.T) {
	needRoot(t)
	cmd := osexec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"="+fakeSysctl(t))
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}},
	}
	out, err := cmd.Output()
	var ee *osexec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("helper: err %v, output %q; want exit 2 (Load failed, Usable unavailable)", err, out)
	}
	if !strings.Contains(string(out), "network isolation unavailable") || !strings.Contains(string(out), "operation not permitted") {
		t.Errorf("Load error = %q, want it to say isolation is unavailable and why", out)
	}
	t.Logf("unavailable: %s", out)
}

func TestUnavailableRefusesReplicas(t *testing.T) {
	r := New("jaco-never-loaded")
	err := r.Attach(context.Background(), "x", netip.MustParseAddr("198.18.0.130"), "web", &api.ServiceSpec{})
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("Attach before Load = %v, want ErrUnavailable", err)
	}
}

// TestManyReplicasOfOneService: a service's replicas on one node may all
// reach each other, pairs growing with replicas²; the kernel takes the
// sets whole however many there are (a single netlink message of them
// was refused past ~55 replicas).
func TestManyReplicasOfOneService(t *testing.T) {
	needRoot(t)
	r := New("jaco-many", WithBridgeSysctl(fakeSysctl(t)))
	if err := r.Load(); err != nil {
		t.Fatalf("Load: %v", err)
	}
	const n = 120
	for i := range n {
		addr := netip.AddrFrom4([4]byte{198, 18, 1 + byte(i/250), 1 + byte(i%250)})
		if err := r.Attach(context.Background(), fmt.Sprintf("r%d", i), addr, "web", &api.ServiceSpec{}); err != nil {
			t.Fatalf("attach replica %d: %v", i, err)
		}
	}
	if got := len(kernelSet(t, "jaco-many", setReplicas)); got != n {
		t.Fatalf("kernel holds %d replica addresses, want %d", got, n)
	}
	if got, want := len(kernelSet(t, "jaco-many", setAllowed)), n*(n-1); got != want {
		t.Fatalf("kernel holds %d allowed pairs, want %d", got, want)
	}
	// A restarted jacod writes the sets whole at its first change: more
	// pairs than one netlink batch may carry.
	again := New("jaco-many", WithBridgeSysctl(fakeSysctl(t)))
	if err := again.Load(); err != nil {
		t.Fatalf("Load again: %v", err)
	}
	for i := range n - 1 {
		addr := netip.AddrFrom4([4]byte{198, 18, 1 + byte(i/250), 1 + byte(i%250)})
		again.members[fmt.Sprintf("r%d", i)] = MemberOf(fmt.Sprintf("r%d", i), addr, "web", &api.ServiceSpec{})
	}
	last := netip.AddrFrom4([4]byte{198, 18, 1 + byte((n-1)/250), 1 + byte((n-1)%250)})
	if err := again.Attach(context.Background(), fmt.Sprintf("r%d", n-1), last, "web", &api.ServiceSpec{}); err != nil {
		t.Fatalf("first attach after a restart: %v", err)
	}
	if got, want := len(kernelSet(t, "jaco-many", setAllowed)), n*(n-1); got != want {
		t.Fatalf("after the restart the kernel holds %d allowed pairs, want %d", got, want)
	}
}
