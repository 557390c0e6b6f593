package hooks

import (
	"fmt"
	"os"
	osexec "os/exec"
	"runtime"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// hostResolvConf is the file every process on the node reads for its
// resolvers; a replica on networks sees its own in its place.
const hostResolvConf = "/etc/resolv.conf"

// sandbox is where the processes of a replica run: its network namespace
// and the file they see as /etc/resolv.conf (a replica on overlay
// networks), and the spec's mounts (mounts.go). The zero sandbox is the
// host (a replica without networks or mounts).
type sandbox struct {
	Netns      string      `json:"netns,omitempty"`
	ResolvConf string      `json:"resolv_conf,omitempty"`
	Mounts     []mountSpec `json:"mounts,omitempty"`

	// join, when set, is the mount namespace of a running replica, which
	// an Exec command enters rather than make its own: a tmpfs of the
	// replica's exists only there, and a namespace made anew would hold
	// another, empty one. The caller closes it.
	join *os.File
}

func (s sandbox) host() bool { return s.Netns == "" && !s.ownMounts() && s.join == nil }

// ownMounts reports whether the sandbox's processes need a mount
// namespace of their own.
func (s sandbox) ownMounts() bool { return s.ResolvConf != "" || len(s.Mounts) > 0 }

// start starts cmd in the sandbox.
//
// Namespaces belong to threads, and a Go program's goroutines move
// between threads, so setns in jacod or in the shim would reach whatever
// else that thread runs later. Instead a goroutine locks itself to a
// thread, moves that thread alone into the sandbox and forks cmd from it:
// a child is cloned from the thread that forks it and so starts with all
// of that thread's namespaces, and so do its own children (launch's,
// finish's). The goroutine then exits without unlocking, which makes the
// Go runtime end the thread rather than hand it to other goroutines. The
// thread is first moved back, as far as it goes: the runtime cannot end
// the process's main thread and parks it for good instead, and parked in
// the sandbox it would keep the replica's namespaces alive.
//
// The shim uses it to start its second stage, so the shim and everything
// it runs (launch, finish) live in the sandbox from their first
// instruction; jacod uses it for Exec commands.
func (s sandbox) start(cmd *osexec.Cmd) error {
	if s.host() {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		back, err := s.enter()
		if err != nil {
			errc <- err
			return
		}
		defer back()
		errc <- cmd.Start()
	}()
	return <-errc
}

// enter moves the calling thread, which must be locked and must not be
// handed back, into the sandbox. back moves it back to its namespaces
// (best effort: the thread is not used again either way).
//
// Mounts: the C library and Go's resolver read /etc/resolv.conf of the
// mount namespace, and a bundle's mounts are made over the node's own
// paths, so they cannot be made in the host's. So the thread takes a
// mount namespace of its own (a copy of the host's; unshare also gives
// the thread its own root and working directory, which the kernel
// requires of a thread that changes mount namespace), marks every mount
// in it a slave (mounts made on the host later still show, nothing
// mounted here reaches the host), binds the replica's resolv.conf over
// /etc/resolv.conf (over the file it names when that is a symlink) and
// makes the spec's mounts (makeMounts). The rest of the file system is
// the host's. The namespace lives as long as a process in it: the shim
// and its hooks, a prepare, or an Exec command that could not join the
// running replica's (join).
func (s sandbox) enter() (back func(), err error) {
	// Opened first: a mount may cover the path.
	var ns *os.File
	if s.Netns != "" {
		if ns, err = os.Open(s.Netns); err != nil {
			return nil, fmt.Errorf("open network namespace: %w", err)
		}
		defer ns.Close()
	}
	var origs []*os.File
	back = func() {
		for i := len(origs) - 1; i >= 0; i-- {
			_ = unix.Setns(int(origs[i].Fd()), 0)
			origs[i].Close()
		}
	}
	defer func() {
		if err != nil {
			back()
		}
	}()
	var kinds []string
	if s.ownMounts() || s.join != nil {
		kinds = append(kinds, "mnt")
	}
	if s.Netns != "" {
		kinds = append(kinds, "net")
	}
	for _, kind := range kinds {
		f, err := os.Open("/proc/thread-self/ns/" + kind)
		if err != nil {
			return nil, fmt.Errorf("open own %s namespace: %w", kind, err)
		}
		origs = append(origs, f)
	}
	switch {
	case s.join != nil:
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			return nil, fmt.Errorf("own root and working directory: %w", err)
		}
		if err := unix.Setns(int(s.join.Fd()), unix.CLONE_NEWNS); err != nil {
			return nil, fmt.Errorf("enter the replica's mount namespace: %w", err)
		}
	case s.ownMounts():
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return nil, fmt.Errorf("new mount namespace: %w", err)
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
			return nil, fmt.Errorf("make mounts slaves: %w", err)
		}
		if s.ResolvConf != "" {
			if err := unix.Mount(s.ResolvConf, hostResolvConf, "", unix.MS_BIND, ""); err != nil {
				return nil, fmt.Errorf("bind %s over %s: %w", s.ResolvConf, hostResolvConf, err)
			}
		}
		if err := makeMounts(s.Mounts); err != nil {
			return nil, err
		}
	}
	if ns != nil {
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			return nil, fmt.Errorf("enter network namespace %s: %w", s.Netns, err)
		}
	}
	return back, nil
}

// loopbackUp brings up lo in the network namespace at path: CNI makes the
// overlay interfaces, and a replica's processes expect 127.0.0.1 to
// reach each other as on the host.
func loopbackUp(path string) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread changed namespace
		errc <- func() error {
			ns, err := os.Open(path)
			if err != nil {
				return fmt.Errorf("open network namespace: %w", err)
			}
			defer ns.Close()
			orig, err := os.Open("/proc/thread-self/ns/net")
			if err != nil {
				return fmt.Errorf("open own network namespace: %w", err)
			}
			defer orig.Close()
			// Back before the thread ends (see sandbox.start).
			defer unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET)
			if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
				return fmt.Errorf("enter network namespace %s: %w", path, err)
			}
			// netlink's package functions open their socket per call, in
			// the calling thread's namespace.
			lo, err := netlink.LinkByName("lo")
			if err != nil {
				return fmt.Errorf("loopback in %s: %w", path, err)
			}
			if err := netlink.LinkSetUp(lo); err != nil {
				return fmt.Errorf("loopback up in %s: %w", path, err)
			}
			return nil
		}()
	}()
	return <-errc
}
