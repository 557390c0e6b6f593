// Package procopts reads the process and container options of a service
// spec (user, stop signal, ulimits, capabilities, sysctls, extra hosts) as
// Docker spells them. The manager checks a spec with it before anything is
// written; the runtimes turn the same words into what they set up, so the
// two never disagree on what a word means (docs/adr/0059).
package procopts

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/jaco-project/jaco/api"
)

// Signal reads a stop signal: "SIGTERM", "TERM" or "15" (any case).
func Signal(name string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(name); err == nil {
		if n < 1 || n > 64 {
			return 0, fmt.Errorf("signal %d: want 1 to 64", n)
		}
		return syscall.Signal(n), nil
	}
	up := strings.ToUpper(name)
	if !strings.HasPrefix(up, "SIG") {
		up = "SIG" + up
	}
	if s := unix.SignalNum(up); s != 0 {
		return s, nil
	}
	return 0, fmt.Errorf("signal %q: not a signal name (such as SIGTERM) or number", name)
}

// rlimits maps Docker's ulimit names to the kernel's resources.
var rlimits = map[string]int{
	"as":         unix.RLIMIT_AS,
	"core":       unix.RLIMIT_CORE,
	"cpu":        unix.RLIMIT_CPU,
	"data":       unix.RLIMIT_DATA,
	"fsize":      unix.RLIMIT_FSIZE,
	"locks":      unix.RLIMIT_LOCKS,
	"memlock":    unix.RLIMIT_MEMLOCK,
	"msgqueue":   unix.RLIMIT_MSGQUEUE,
	"nice":       unix.RLIMIT_NICE,
	"nofile":     unix.RLIMIT_NOFILE,
	"nproc":      unix.RLIMIT_NPROC,
	"rss":        unix.RLIMIT_RSS,
	"rtprio":     unix.RLIMIT_RTPRIO,
	"rttime":     unix.RLIMIT_RTTIME,
	"sigpending": unix.RLIMIT_SIGPENDING,
	"stack":      unix.RLIMIT_STACK,
}

// Rlimit is the kernel resource a ulimit name stands for, and its OCI
// name ("RLIMIT_NOFILE").
func Rlimit(name string) (resource int, ociName string, err error) {
	r, ok := rlimits[name]
	if !ok {
		names := make([]string, 0, len(rlimits))
		for n := range rlimits {
			names = append(names, n)
		}
		slices.Sort(names)
		return 0, "", fmt.Errorf("ulimit %q: want one of %s", name, strings.Join(names, ", "))
	}
	return r, "RLIMIT_" + strings.ToUpper(name), nil
}

// CheckUlimit refuses an unknown name, a negative value and a soft limit
// above the hard one. -1 is unlimited, as in Docker.
func CheckUlimit(u *api.Ulimit) error {
	if _, _, err := Rlimit(u.GetName()); err != nil {
		return err
	}
	if u.GetSoft() < -1 || u.GetHard() < -1 {
		return fmt.Errorf("ulimit %s: %d:%d: want 0 or more (-1: unlimited)", u.GetName(), u.GetSoft(), u.GetHard())
	}
	if Value(u.GetSoft()) > Value(u.GetHard()) {
		return fmt.Errorf("ulimit %s: soft limit %d above the hard limit %d", u.GetName(), u.GetSoft(), u.GetHard())
	}
	return nil
}

// Value is a ulimit's value as the kernel takes it (-1: RLIM_INFINITY).
func Value(v int64) uint64 {
	if v < 0 {
		return unix.RLIM_INFINITY
	}
	return uint64(v)
}

// capabilities are the kernel's, by name without the CAP_ prefix.
var capabilities = []string{
	"AUDIT_CONTROL", "AUDIT_READ", "AUDIT_WRITE", "BLOCK_SUSPEND", "BPF",
	"CHECKPOINT_RESTORE", "CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER",
	"FSETID", "IPC_LOCK", "IPC_OWNER", "KILL", "LEASE", "LINUX_IMMUTABLE",
	"MAC_ADMIN", "MAC_OVERRIDE", "MKNOD", "NET_ADMIN", "NET_BIND_SERVICE",
	"NET_BROADCAST", "NET_RAW", "PERFMON", "SETFCAP", "SETGID", "SETPCAP",
	"SETUID", "SYSLOG", "SYS_ADMIN", "SYS_BOOT", "SYS_CHROOT", "SYS_MODULE",
	"SYS_NICE", "SYS_PACCT", "SYS_PTRACE", "SYS_RAWIO", "SYS_RESOURCE",
	"SYS_TIME", "SYS_TTY_CONFIG", "WAKE_ALARM",
}

// All is the word that stands for every capability in cap_add and
// cap_drop.
const All = "ALL"

// Capabilities is every capability the kernel knows, as "CAP_NAME".
func Capabilities() []string {
	out := make([]string, len(capabilities))
	for i, c := range capabilities {
		out[i] = "CAP_" + c
	}
	return out
}

// Capability reads a capability name ("NET_ADMIN", "cap_net_admin") as
// "CAP_NET_ADMIN", or All.
func Capability(name string) (string, error) {
	up := strings.ToUpper(name)
	if up == All {
		return All, nil
	}
	if slices.Contains(capabilities, strings.TrimPrefix(up, "CAP_")) {
		return "CAP_" + strings.TrimPrefix(up, "CAP_"), nil
	}
	return "", fmt.Errorf("capability %q: not a Linux capability (such as NET_ADMIN) or ALL", name)
}

// ipcSysctls are the IPC namespace's parameters outside fs.mqueue.
var ipcSysctls = []string{
	"kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.sem",
	"kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced",
}

// CheckSysctl refuses a kernel parameter the replica's own namespaces do
// not hold: setting it would change the whole node.
func CheckSysctl(name string) error {
	switch {
	case name == "" || strings.ContainsAny(name, "/ ") || strings.Contains(name, ".."):
		return fmt.Errorf("sysctl %q: not a kernel parameter name", name)
	case slices.Contains(ipcSysctls, name),
		strings.HasPrefix(name, "fs.mqueue."),
		strings.HasPrefix(name, "net."):
		return nil
	}
	return fmt.Errorf("sysctl %q is not namespaced: it would change the whole node; only net.*, fs.mqueue.* and the IPC kernel.* parameters may be set", name)
}

// ExtraHost reads an extra_hosts entry, "HOST:IP" (Docker's order; IPv6
// addresses keep their colons) or "HOST=IP" (compose's newer spelling).
func ExtraHost(s string) (host string, ip netip.Addr, err error) {
	sep := strings.IndexAny(s, ":=")
	if sep <= 0 {
		return "", netip.Addr{}, fmt.Errorf("extra host %q: want HOST:IP", s)
	}
	host, addr := s[:sep], strings.Trim(s[sep+1:], "[]")
	ip, err = netip.ParseAddr(addr)
	if err != nil {
		return "", netip.Addr{}, fmt.Errorf("extra host %q: %q is not an IP address", s, addr)
	}
	if strings.ContainsAny(host, " \t") {
		return "", netip.Addr{}, fmt.Errorf("extra host %q: a host name holds no spaces", s)
	}
	return host, ip, nil
}

// ContainerOnly names the options of spec that only a container can have
// (a hook bundle runs on the node's own root file system, host name and
// capabilities).
func ContainerOnly(spec *api.ServiceSpec) []string {
	var set []string
	add := func(name string, on bool) {
		if on {
			set = append(set, name)
		}
	}
	add("hostname", spec.GetHostname() != "")
	add("cap_add", len(spec.GetCapAdd()) > 0)
	add("cap_drop", len(spec.GetCapDrop()) > 0)
	add("sysctls", len(spec.GetSysctls()) > 0)
	add("init", spec.GetInit())
	add("read_only", spec.GetReadOnly())
	add("extra_hosts", len(spec.GetExtraHosts()) > 0)
	add("dns", len(spec.GetDns()) > 0)
	add("dns_search", len(spec.GetDnsSearch()) > 0)
	add("dns_options", len(spec.GetDnsOptions()) > 0)
	add("shm_size", spec.GetShmSizeBytes() != 0)
	// Mounts are not here: a bundle gets them in a mount namespace of its
	// own, over the node's paths (agent/exec/hooks).
	return set
}
