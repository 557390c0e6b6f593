package hooks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/containerd/containerd/v2/pkg/netns"
	"golang.org/x/sys/unix"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/agent/netattach"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/durable"
)

// Files of a replica on networks, in Replica.Dir.
const (
	netFile    = "hooks-network.json" // netState (runtime)
	resolvFile = "hooks-resolv.conf"  // bound over /etc/resolv.conf
)

// ErrNoNetworks is returned by Prepare for a replica whose spec names
// networks when the runtime was given none (WithNetworks).
var ErrNoNetworks = errors.New("hooks runtime has no overlay networks on this node")

// netState is everything Remove, Exec, Address and an adopting Controller
// need of a replica's networks, so none of them asks the node's view
// (which may have forgotten a network the replica still holds). It is
// written before each step that takes something (namespace, leases), so
// what a crash leaves is known.
type netState struct {
	sandbox
	Attachments []exec.Attachment `json:"attachments"`
	// Addresses are set once every attachment is made, in their order.
	Addresses []exec.NetworkAddress `json:"addresses,omitempty"`
}

func (st netState) attached() bool {
	return len(st.Attachments) > 0 && len(st.Addresses) == len(st.Attachments)
}

// networked reports whether the replica's spec puts it on networks.
func (c *controller) networked() bool { return len(api.TaskNetworks(c.rep.Task.GetSpec())) > 0 }

func (c *controller) readNet() (netState, bool, error) { return readRecord[netState](c.path(netFile)) }

// sandbox is where the replica's launch, finish and Exec commands run:
// its network namespace and resolv.conf when it is on networks, its
// mounts when its spec has some; the host otherwise.
func (c *controller) sandbox() (sandbox, error) {
	var sb sandbox
	if c.networked() {
		st, ok, err := c.readNet()
		if err != nil {
			return sandbox{}, err
		}
		if !ok || !st.attached() {
			return sandbox{}, fmt.Errorf("replica %s is not attached to its networks (prepare first)", c.rep.Task.GetId())
		}
		sb = st.sandbox
	}
	ms, err := c.readMounts()
	if err != nil {
		return sandbox{}, err
	}
	sb.Mounts = ms
	return sb, nil
}

// setupNetworks gives the replica a network namespace attached to each of
// its spec's networks and the resolv.conf naming the node's DNS server.
// It picks up where an earlier call stopped.
func (c *controller) setupNetworks(ctx context.Context) error {
	if c.rt.nets == nil || c.rt.attacher == nil {
		return fmt.Errorf("replica %s on networks %v: %w", c.rep.Task.GetId(), api.TaskNetworks(c.rep.Task.GetSpec()), ErrNoNetworks)
	}
	st, ok, err := c.readNet()
	if err != nil {
		return err
	}
	if ok && st.attached() && isNetns(st.Netns) {
		return nil
	}
	if !ok {
		// The attachments are resolved once and kept: a replica keeps the
		// networks it was prepared with.
		for _, name := range api.TaskNetworks(c.rep.Task.GetSpec()) {
			att, err := c.rt.nets.Attachment(ctx, name)
			if err != nil {
				return fmt.Errorf("network %q: %w", name, err)
			}
			st.Attachments = append(st.Attachments, att)
		}
		st.ResolvConf = c.path(resolvFile)
		if err := durable.WriteFile(st.ResolvConf, netattach.ResolvConf(st.Attachments), 0o644); err != nil {
			return fmt.Errorf("write resolv.conf: %w", err)
		}
	} else if len(st.Addresses) < len(st.Attachments) {
		// An earlier attempt stopped between attaching and recording the
		// addresses: give back what it may hold before attaching again.
		nsPath := st.Netns
		if !isNetns(nsPath) {
			nsPath = ""
		}
		if err := c.rt.attacher.Teardown(ctx, c.id(), nsPath, 0, st.Attachments); err != nil {
			return err
		}
	}
	if !isNetns(st.Netns) {
		if err := removeNetns(st.Netns); err != nil { // the file a reboot left
			return err
		}
		ns, err := netns.NewNetNS(c.rt.netnsDir)
		if err != nil {
			return fmt.Errorf("create network namespace: %w", err)
		}
		st.Netns, st.Addresses = ns.GetPath(), nil
		if err := writeJSON(c.path(netFile), st); err != nil {
			_ = ns.Remove()
			return err
		}
	}
	if err := loopbackUp(st.Netns); err != nil {
		return err
	}
	addrs, err := c.rt.attacher.Setup(ctx, c.id(), st.Netns, 0, st.Attachments)
	if err != nil {
		return err
	}
	st.Addresses = addrs
	if err := writeJSON(c.path(netFile), st); err != nil {
		return err
	}
	c.log.Info("attached to networks", "networks", api.TaskNetworks(c.rep.Task.GetSpec()), "addresses", addrs)
	return nil
}

// teardownNetworks detaches the replica from its networks (CNI DEL frees
// the leases) and removes its namespace, from the state alone. The state
// goes last, so a failed teardown is tried again by the next Remove.
func (c *controller) teardownNetworks(ctx context.Context) error {
	st, ok, err := c.readNet()
	if err != nil || !ok {
		return err
	}
	if len(st.Attachments) > 0 {
		if c.rt.attacher == nil {
			return fmt.Errorf("detach replica %s from its networks: %w", c.id(), ErrNoNetworks)
		}
		nsPath := st.Netns
		if !isNetns(nsPath) {
			// Lost (the node rebooted: the bind mount is gone, maybe not
			// its file): the plugins then only free the leases.
			nsPath = ""
		}
		if err := c.rt.attacher.Teardown(ctx, c.id(), nsPath, 0, st.Attachments); err != nil {
			return err
		}
	}
	if err := removeNetns(st.Netns); err != nil {
		return err
	}
	for _, name := range []string{resolvFile, netFile} {
		if err := os.Remove(c.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", name, err)
		}
	}
	return nil
}

// NetworkAddresses implements exec.Networked: the replica's address on
// each of its networks once it was started, none for a replica without
// networks.
func (c *controller) NetworkAddresses(context.Context) ([]exec.NetworkAddress, error) {
	if !c.networked() {
		return nil, nil
	}
	if started, err := c.started(); err != nil || !started {
		return nil, err
	}
	st, _, err := c.readNet()
	return st.Addresses, err
}

// Address implements exec.Controller: 127.0.0.1 for a replica on the
// host network, its address on its first network otherwise (the node
// reaches it through that network's bridge).
func (c *controller) Address(context.Context) (string, error) {
	if !c.networked() {
		return "127.0.0.1", nil
	}
	st, ok, err := c.readNet()
	if err != nil {
		return "", err
	}
	if !ok || len(st.Addresses) == 0 {
		return "", fmt.Errorf("replica %s has no network address yet", c.id())
	}
	return st.Addresses[0].Addr.String(), nil
}

func (c *controller) id() string { return c.rep.Task.GetId() }

// isNetns reports whether path is a mounted network namespace (after a
// reboot its file may be left, unmounted).
func isNetns(path string) bool {
	if path == "" {
		return false
	}
	var sfs unix.Statfs_t
	return unix.Statfs(path, &sfs) == nil && sfs.Type == unix.NSFS_MAGIC
}

// removeNetns unmounts and deletes the namespace at path, or deletes the
// file when it is no longer mounted.
func removeNetns(path string) error {
	if path == "" {
		return nil
	}
	var err error
	if isNetns(path) {
		err = netns.LoadNetNS(path).Remove()
	} else {
		err = os.Remove(path)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove network namespace %s: %w", path, err)
	}
	return nil
}
