package formation

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/manager"
)

// DefaultDelay is how long a statically formed node waits after it
// starts before it initializes.
const DefaultDelay = 5 * time.Second

// ErrInitialClusterWithState refuses --initial-cluster on a node that
// already has raft state: the configuration is for forming only, and the
// state, not the flag, says who the members are now.
var ErrInitialClusterWithState = errors.New("this node already has raft state; --initial-cluster is only for forming a new cluster: remove the flag to restart it")

// Flags are the daemon's formation flags as given (docs/adr/0013,
// docs/adr/0014).
type Flags struct {
	// NodeName is the node's name (--node-name): ordinal formation reads
	// its ordinal from it, and static formation finds it in the list.
	NodeName string
	// JoinSecretFile holds the secret formation joins prove.
	JoinSecretFile string
	// Bootstrap: ordinal formation; ordinal 0 of the node name bootstraps
	// when nothing answers at JoinAddrs, every node joins through them.
	Bootstrap bool
	JoinAddrs []string
	// InitialCluster: static formation, "name=host:port,...".
	InitialCluster string
	// Delay is how long a static node waits before it forms (0:
	// DefaultDelay).
	Delay time.Duration
}

// Settings are what the formation flags resolve to (Parse).
type Settings struct {
	// Secret is the join secret read from Flags.JoinSecretFile; nil
	// without one.
	Secret *ca.JoinSecret
	// Bootstrap, JoinAddrs and Ordinal (the -N suffix of the node name)
	// are ordinal formation's.
	Bootstrap bool
	JoinAddrs []string
	Ordinal   int
	// Static is the parsed --initial-cluster, sorted by name; nil
	// without static formation.
	Static []StaticMember
	// Delay is how long a static node waits before it forms.
	Delay time.Duration
}

// Parse validates the formation flags, reads the join secret and parses
// what the flags carry. Bad flags are refused whole; the error names the
// flag to fix.
func Parse(f Flags) (Settings, error) {
	s := Settings{Bootstrap: f.Bootstrap, JoinAddrs: f.JoinAddrs, Delay: f.Delay}
	if f.Bootstrap && f.InitialCluster != "" {
		return Settings{}, errors.New("--bootstrap (ordinal formation) and --initial-cluster (static formation) exclude each other")
	}
	if (f.Bootstrap || f.InitialCluster != "") && f.JoinSecretFile == "" {
		return Settings{}, errors.New("--bootstrap and --initial-cluster need --join-secret-file")
	}
	if len(f.JoinAddrs) > 0 && !f.Bootstrap {
		return Settings{}, errors.New("--join-addr is for ordinal formation: give --bootstrap too")
	}
	if f.JoinSecretFile != "" {
		secret, err := ca.ReadJoinSecret(f.JoinSecretFile)
		if err != nil {
			return Settings{}, fmt.Errorf("--join-secret-file: %w", err)
		}
		s.Secret = secret
	}
	if f.Bootstrap {
		if len(f.JoinAddrs) == 0 {
			return Settings{}, errors.New("--bootstrap needs --join-addr (the replicas' service name or a list of host:port)")
		}
		for _, a := range f.JoinAddrs {
			if err := checkHostPort(a); err != nil {
				return Settings{}, fmt.Errorf("--join-addr %q: %w", a, err)
			}
		}
		ord, err := ParseOrdinal(f.NodeName)
		if err != nil {
			return Settings{}, fmt.Errorf("--bootstrap: %w", err)
		}
		s.Ordinal = ord
	}
	if f.InitialCluster != "" {
		members, err := ParseInitialCluster(f.InitialCluster)
		if err != nil {
			return Settings{}, fmt.Errorf("--initial-cluster: %w", err)
		}
		if !slices.ContainsFunc(members, func(m StaticMember) bool { return m.Name == f.NodeName }) {
			return Settings{}, fmt.Errorf("--initial-cluster does not name this node (--node-name %q)", f.NodeName)
		}
		s.Static = members
	}
	if f.Delay < 0 {
		return Settings{}, fmt.Errorf("negative --formation-delay %s", f.Delay)
	}
	if f.Delay == 0 {
		s.Delay = DefaultDelay
	}
	return s, nil
}

// CheckState refuses static formation on a data dir whose raftDir holds
// raft state, before anything in it is touched.
func (s Settings) CheckState(raftDir string) error {
	if s.Static != nil && manager.StateExists(raftDir) {
		return ErrInitialClusterWithState
	}
	return nil
}

// ordinalName is a StatefulSet pod name: anything, a dash, a decimal
// ordinal without leading zeros.
var ordinalName = regexp.MustCompile(`^.*[^-]-(0|[1-9][0-9]{0,8})$`)

// ParseOrdinal returns the ordinal N of a node name ending in -N.
func ParseOrdinal(name string) (int, error) {
	m := ordinalName.FindStringSubmatch(name)
	if m == nil {
		return 0, fmt.Errorf("node name %q does not end in an ordinal -N (e.g. jaco-0, jaco-1)", name)
	}
	return strconv.Atoi(m[1])
}

// StaticMember is one entry of --initial-cluster.
type StaticMember struct {
	Name, Addr string
}

// memberName keeps names usable as node names and certificate SANs.
var memberName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,61}[A-Za-z0-9])?$`)

// ParseInitialCluster parses "name1=host:port,name2=host:port,...": names
// and addresses unique, sorted by name on return.
func ParseInitialCluster(s string) ([]StaticMember, error) {
	var out []StaticMember
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		name, addr, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, fmt.Errorf("entry %q is not name=host:port", entry)
		}
		if !memberName.MatchString(name) {
			return nil, fmt.Errorf("entry %q: name %q is not a DNS-style label (letters, digits, '.', '-')", entry, name)
		}
		if err := checkHostPort(addr); err != nil {
			return nil, fmt.Errorf("entry %q: %w", entry, err)
		}
		for _, o := range out {
			if o.Name == name {
				return nil, fmt.Errorf("name %q is given twice", name)
			}
			if o.Addr == addr {
				return nil, fmt.Errorf("address %s is given to %s and %s", addr, o.Name, name)
			}
		}
		out = append(out, StaticMember{Name: name, Addr: addr})
	}
	slices.SortFunc(out, func(a, b StaticMember) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// canonicalInitialCluster is the configuration every node derives the
// cluster from: the same members give the same text whatever the order
// they were listed in.
func canonicalInitialCluster(members []StaticMember) string {
	parts := make([]string, len(members))
	for i, m := range members {
		parts[i] = m.Name + "=" + m.Addr
	}
	return strings.Join(parts, ",")
}

func checkHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "" {
		return fmt.Errorf("no host in %q", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("port %q is not 1-65535", port)
	}
	return nil
}
