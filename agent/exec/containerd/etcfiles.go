package containerd

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/agent/netattach"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/procopts"
	"github.com/jaco-project/jaco/internal/durable"
)

// A replica's /etc/resolv.conf and /etc/hosts, when it gets them, are
// files in its Replica.Dir (kept across agent restarts) bind-mounted
// read-only. Docker mounts its per-container copies read-write; here
// they are the agent's to write (again at each Prepare or Start), a
// replica's own edit would be lost silently, and read-only matches the
// overlay networks' resolv.conf and a read_only root.

// hostsFile is the replica's /etc/hosts in Replica.Dir.
const hostsFile = "hosts"

// resolvConfContent is the replica's resolv.conf: the overlay networks'
// (netattach.ResolvConf: the node's DNS server, ndots:0), with each of
// the spec's dns (nameservers), dns_search and dns_options replacing
// those lines, as Docker's --dns, --dns-search and --dns-option do. So
// dns replaces the node's DNS server: the replica no longer finds
// services by name unless a server it names answers for them. A replica
// on no overlay network starts from nothing: a spec with dns_search
// alone gets no nameserver (the resolver then asks 127.0.0.1). Nil when
// the replica gets the image's own file.
func resolvConfContent(spec *api.ServiceSpec, atts []exec.Attachment) ([]byte, error) {
	base := netattach.ResolvConf(atts)
	set := map[string][]string{"nameserver": nil, "search": nil, "options": nil}
	for _, s := range spec.GetDns() {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("dns %q: not an IP address", s)
		}
		set["nameserver"] = append(set["nameserver"], "nameserver "+a.String())
	}
	for key, vals := range map[string][]string{"search": spec.GetDnsSearch(), "options": spec.GetDnsOptions()} {
		for _, v := range vals {
			if v == "" || strings.ContainsAny(v, " \t\r\n") {
				return nil, fmt.Errorf("dns_%s %q: want one word", key, v)
			}
		}
		if len(vals) > 0 {
			set[key] = []string{key + " " + strings.Join(vals, " ")}
		}
	}
	if len(set["nameserver"])+len(set["search"])+len(set["options"]) == 0 {
		return base, nil
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(base)), "\n") {
		if key, _, _ := strings.Cut(line, " "); line != "" && set[key] == nil {
			out = append(out, line)
		}
	}
	for _, key := range []string{"nameserver", "search", "options"} {
		out = append(out, set[key]...)
	}
	return []byte(strings.Join(out, "\n") + "\n"), nil
}

// hostsContent is the replica's /etc/hosts: the loopback names, its host
// name on its address, then each extra host (HOST:IP) in the spec's order.
func hostsContent(hostname, addr string, extra []string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	if addr != "" && hostname != "" {
		fmt.Fprintf(&b, "%s\t%s\n", addr, hostname)
	}
	for _, e := range extra {
		host, ip, err := procopts.ExtraHost(e)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%s\t%s\n", ip, host)
	}
	return b.Bytes(), nil
}

// writeResolvConf writes the replica's resolv.conf and returns its path,
// "" when it keeps the image's.
func (c *controller) writeResolvConf(st replicaState) (string, error) {
	b, err := resolvConfContent(c.rep.Task.GetSpec(), st.Networks)
	if err != nil || b == nil {
		return "", err
	}
	path := filepath.Join(c.rep.Dir, resolvConfFile)
	if err := writeIfChanged(path, b); err != nil {
		return "", fmt.Errorf("write resolv.conf: %w", err)
	}
	return path, nil
}

// writeHosts writes the replica's /etc/hosts once its address is known
// (Start), for a spec with extra_hosts.
func (c *controller) writeHosts(addr string) error {
	spec := c.rep.Task.GetSpec()
	if len(spec.GetExtraHosts()) == 0 {
		return nil
	}
	b, err := hostsContent(replicaHostname(spec, c.id), addr, spec.GetExtraHosts())
	if err != nil {
		return fmt.Errorf("replica %s: %w", c.id, err)
	}
	if err := writeIfChanged(filepath.Join(c.rep.Dir, hostsFile), b); err != nil {
		return fmt.Errorf("replica %s: write hosts file: %w", c.id, err)
	}
	return nil
}

// writeIfChanged replaces path with b atomically unless it holds b
// already: a running container's bind mount holds the file it had, so an
// unchanged file is left alone rather than swapped under it.
func writeIfChanged(path string, b []byte) error {
	old, err := os.ReadFile(path)
	if err == nil && bytes.Equal(old, b) {
		return nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return durable.WriteFile(path, b, 0o644)
}
