package netattach

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"

	"github.com/jaco-project/jaco/agent/exec"
)

// maxBridgeName is IFNAMSIZ less the terminating NUL.
const maxBridgeName = 15

// cniName is the CNI network name of an overlay network: host-local keeps
// its leases in a directory of that name and libcni its cache, so it
// derives from the network id alone (persisted attachments name the same
// directories after an agent restart).
func cniName(networkID string) string {
	if validID.MatchString(networkID) {
		return "jaco-net-" + networkID
	}
	sum := sha256.Sum256([]byte(networkID))
	return "jaco-net-" + hex.EncodeToString(sum[:8])
}

// validID is what may stand in a CNI network name (and a directory name)
// as is; jaco's ids (26 base32 characters) always do.
var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// check refuses an attachment the plugins would misconfigure: addresses
// outside their prefixes, or no room for a replica in the block.
func check(att exec.Attachment) error {
	switch {
	case att.NetworkID == "":
		return fmt.Errorf("attachment to %q: no network id", att.Network)
	case att.Bridge == "" || len(att.Bridge) > maxBridgeName:
		return fmt.Errorf("attachment to %q: bridge name %q: want 1 to %d characters", att.Network, att.Bridge, maxBridgeName)
	case !att.Subnet.IsValid() || !att.Subnet.Addr().Is4() || !att.Block.IsValid() || !att.Block.Addr().Is4():
		return fmt.Errorf("attachment to %q: subnet %s and block %s must be IPv4 prefixes", att.Network, att.Subnet, att.Block)
	case att.Block.Masked() != att.Block || att.Block.Bits() < att.Subnet.Bits() || !att.Subnet.Contains(att.Block.Addr()):
		return fmt.Errorf("attachment to %q: block %s is not a block of subnet %s", att.Network, att.Block, att.Subnet)
	case !att.Block.Contains(att.Gateway) || att.Gateway == att.Block.Addr():
		return fmt.Errorf("attachment to %q: gateway %s is not a host of block %s", att.Network, att.Gateway, att.Block)
	case !att.Block.Contains(att.Gateway.Next()) || att.Gateway.Next() == lastAddr(att.Block):
		return fmt.Errorf("attachment to %q: block %s has no address after gateway %s", att.Network, att.Block, att.Gateway)
	case att.MTU < 0:
		return fmt.Errorf("attachment to %q: mtu %d", att.Network, att.MTU)
	}
	return nil
}

// lastAddr is a prefix's broadcast address.
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v |= host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// confList is the CNI network of one attachment: the network's bridge on
// this node, its address the gateway; replicas take addresses from the
// node's block after the gateway (leases under ipamDir) and reach the whole
// subnet, virtual IPs included, through the gateway. No masquerading: a
// replica's address must reach other nodes unchanged, since their rules
// and DNS answers know it. The firewall plugin accepts the replica's
// traffic in iptables' FORWARD (a Docker engine sets its policy to DROP);
// separating networks is the node's nftables ruleset's job, and an accept
// here does not override a drop there.
func confList(att exec.Attachment, ipamDir string) ([]byte, error) {
	if err := check(att); err != nil {
		return nil, err
	}
	type m = map[string]any
	bridge := m{
		"type":        "bridge",
		"bridge":      att.Bridge,
		"isGateway":   true,
		"ipMasq":      false,
		"hairpinMode": true,
		"ipam": m{
			"type": "host-local",
			"ranges": [][]m{{{
				"subnet":     att.Block.String(),
				"gateway":    att.Gateway.String(),
				"rangeStart": att.Gateway.Next().String(),
			}}},
			"routes":  []m{{"dst": att.Subnet.Masked().String()}},
			"dataDir": ipamDir,
		},
	}
	if att.MTU > 0 {
		bridge["mtu"] = att.MTU
	}
	conf := m{
		"cniVersion": "1.0.0",
		"name":       cniName(att.NetworkID),
		"plugins":    []m{bridge, {"type": "firewall"}},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cni config of network %q: %w", att.Network, err)
	}
	return b, nil
}

// ResolvConf is the resolv.conf of a replica on atts: the node's DNS
// server on the first network's gateway (it answers for every network the
// node holds and forwards other names). ndots:0 sends a bare service name
// to it as is rather than through search domains. Nil without atts.
func ResolvConf(atts []exec.Attachment) []byte {
	if len(atts) == 0 {
		return nil
	}
	return fmt.Appendf(nil, "nameserver %s\noptions ndots:0\n", atts[0].Gateway)
}
