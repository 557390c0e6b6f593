package node

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jaco-project/jaco/ca"
)

// DefaultFormationDelay is how long a statically formed node waits after
// it starts before it initializes.
const DefaultFormationDelay = 5 * time.Second

// formation is what the formation flags resolve to (setDefaults).
type formation struct {
	secret *ca.JoinSecret
	// ordinal is the -N suffix of the node name (ordinal formation).
	ordinal int
	// static is the parsed --initial-cluster, sorted by name.
	static []staticMember
}

// checkFormation validates the formation settings, reads the join secret
// and parses what the flags carry. Bad settings are refused whole.
func (c *Config) checkFormation() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	if c.Bootstrap && c.InitialCluster != "" {
		return bad("--bootstrap (ordinal formation) and --initial-cluster (static formation) exclude each other")
	}
	if (c.Bootstrap || c.InitialCluster != "") && c.JoinSecretFile == "" {
		return bad("--bootstrap and --initial-cluster need --join-secret-file")
	}
	if len(c.JoinAddrs) > 0 && !c.Bootstrap {
		return bad("--join-addr is for ordinal formation: give --bootstrap too")
	}
	if c.JoinSecretFile != "" {
		s, err := ca.ReadJoinSecret(c.JoinSecretFile)
		if err != nil {
			return bad("--join-secret-file: %v", err)
		}
		c.formation.secret = s
	}
	if c.Bootstrap {
		if len(c.JoinAddrs) == 0 {
			return bad("--bootstrap needs --join-addr (the replicas' service name or a list of host:port)")
		}
		for _, a := range c.JoinAddrs {
			if err := checkHostPort(a); err != nil {
				return bad("--join-addr %q: %v", a, err)
			}
		}
		ord, err := ParseOrdinal(c.NodeName)
		if err != nil {
			return bad("--bootstrap: %v", err)
		}
		c.formation.ordinal = ord
	}
	if c.InitialCluster != "" {
		members, err := ParseInitialCluster(c.InitialCluster)
		if err != nil {
			return bad("--initial-cluster: %v", err)
		}
		if !slices.ContainsFunc(members, func(m staticMember) bool { return m.Name == c.NodeName }) {
			return bad("--initial-cluster does not name this node (--node-name %q)", c.NodeName)
		}
		c.formation.static = members
	}
	if c.FormationDelay < 0 {
		return bad("negative --formation-delay %s", c.FormationDelay)
	}
	if c.FormationDelay == 0 {
		c.FormationDelay = DefaultFormationDelay
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

// staticMember is one entry of --initial-cluster.
type staticMember struct {
	Name, Addr string
}

// memberName keeps names usable as node names and certificate SANs.
var memberName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,61}[A-Za-z0-9])?$`)

// ParseInitialCluster parses "name1=host:port,name2=host:port,...": names
// and addresses unique, sorted by name on return.
func ParseInitialCluster(s string) ([]staticMember, error) {
	var out []staticMember
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
			return nil, fmt.Errorf("entry %q: %v", entry, err)
		}
		for _, o := range out {
			if o.Name == name {
				return nil, fmt.Errorf("name %q is given twice", name)
			}
			if o.Addr == addr {
				return nil, fmt.Errorf("address %s is given to %s and %s", addr, o.Name, name)
			}
		}
		out = append(out, staticMember{Name: name, Addr: addr})
	}
	slices.SortFunc(out, func(a, b staticMember) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// canonicalInitialCluster is the configuration every node derives the
// cluster from: the same members give the same text whatever the order
// they were listed in.
func canonicalInitialCluster(members []staticMember) string {
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
