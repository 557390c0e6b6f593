package containerd

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"

	"github.com/containerd/containerd/v2/pkg/identifiers"
)

// Names are what one node's runtime calls its things; all derive from the
// node id so nodes sharing a machine (and a containerd) never collide.
type Names struct {
	// Namespace is the containerd namespace ("jaco-<12 hex>"); runc keeps
	// its state per namespace too.
	Namespace string
	// Network is the CNI network name (iptables chains and IPAM leases are
	// keyed by it).
	Network string
	// Bridge is the Linux bridge ("jc<12 hex>", within IFNAMSIZ-1 = 15).
	Bridge string
	// Subnet is the containers' subnet.
	Subnet netip.Prefix
}

// subnetPool is where derived subnets come from: the upper half of
// 198.18.0.0/24 (benchmarking range, never routed), in /28 slots. The
// multi-host tests hand out hub addresses from the bottom of the same /24,
// so the two do not meet while fewer than 128 hosts exist.
var subnetPool = netip.MustParsePrefix("198.18.0.128/25")

const subnetBits = 28

// Slots is how many container addresses Subnet hands out.
func (n Names) Slots() int {
	return max(0, 1<<(32-n.Subnet.Bits())-3)
}

// NamesFor derives a node's names from its id. A non-empty subnet (CIDR)
// replaces the derived one.
func NamesFor(nodeID, subnet string) (Names, error) {
	sum := sha256.Sum256([]byte(nodeID))
	h := hex.EncodeToString(sum[:])
	n := Names{
		Namespace: "jaco-" + h[:12],
		Network:   "jaco-" + h[:12],
		Bridge:    "jc" + h[:12],
	}
	if subnet != "" {
		p, err := netip.ParsePrefix(subnet)
		if err != nil || !p.Addr().Is4() || p.Bits() > 29 {
			return Names{}, fmt.Errorf("subnet %q: want an IPv4 CIDR of /29 or larger", subnet)
		}
		n.Subnet = p.Masked()
		return n, nil
	}
	slots := 1 << (subnetBits - subnetPool.Bits())
	slot := int(sum[0]) % slots
	base := subnetPool.Addr().As4()
	base[3] += byte(slot << (32 - subnetBits))
	n.Subnet = netip.PrefixFrom(netip.AddrFrom4(base), subnetBits)
	return n, nil
}

// CNIConfList is the node's network: a bridge with host-local addresses
// (leases kept under ipamDir), portmap for published ports, and the
// firewall plugin so a FORWARD policy of DROP (a Docker engine sets one)
// does not cut the containers off.
func (n Names) CNIConfList(ipamDir string) ([]byte, error) {
	type m = map[string]any
	conf := m{
		"cniVersion": "1.0.0",
		"name":       n.Network,
		"plugins": []m{
			{
				"type":        "bridge",
				"bridge":      n.Bridge,
				"isGateway":   true,
				"ipMasq":      true,
				"hairpinMode": true,
				"ipam": m{
					"type":    "host-local",
					"ranges":  [][]m{{{"subnet": n.Subnet.String()}}},
					"routes":  []m{{"dst": "0.0.0.0/0"}},
					"dataDir": ipamDir,
				},
			},
			{"type": "portmap", "capabilities": m{"portMappings": true}, "snat": true},
			{"type": "firewall"},
		},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cni config: %w", err)
	}
	return b, nil
}

// containerID is the container (and CNI attachment) id of a task: the task
// id itself when containerd accepts it, else a digest of it.
func containerID(taskID string) (string, error) {
	if taskID == "" {
		return "", fmt.Errorf("containerd runtime: replica has no task id")
	}
	if identifiers.Validate(taskID) == nil {
		return taskID, nil
	}
	sum := sha256.Sum256([]byte(taskID))
	return "r" + hex.EncodeToString(sum[:16]), nil
}
