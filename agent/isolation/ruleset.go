package isolation

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"

	"github.com/jaco-project/jaco/internal/nftexpr"
)

// Names inside the table.
const (
	chainForward = "forward"
	setReplicas  = "replicas"
	setAllowed   = "allowed"
)

// BridgeNetfilterSysctl is the switch that passes bridged IPv4 frames
// through the inet hooks (br_netfilter).
const BridgeNetfilterSysctl = "/proc/sys/net/bridge/bridge-nf-call-iptables"

// Registers the rules use (nft's "reg 1" and the 32-bit one after it, so a
// lookup of reg 1 reads the 8-byte concatenation saddr . daddr).
const (
	reg1   = 1
	reg32b = 9
)

// ruleset is the table and the objects in it, named for one node.
type ruleset struct {
	table    *nftables.Table
	replicas *nftables.Set
	allowed  *nftables.Set
	forward  *nftables.Chain
}

func newRuleset(name string) ruleset {
	t := &nftables.Table{Family: nftables.TableFamilyINet, Name: name}
	accept := nftables.ChainPolicyAccept
	return ruleset{
		table:    t,
		replicas: &nftables.Set{Table: t, Name: setReplicas, KeyType: nftables.TypeIPAddr},
		allowed: &nftables.Set{Table: t, Name: setAllowed, Concatenation: true,
			KeyType: nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeIPAddr)},
		forward: &nftables.Chain{
			Table:    t,
			Name:     chainForward,
			Type:     nftables.ChainTypeFilter,
			Hooknum:  nftables.ChainHookForward,
			Priority: nftables.ChainPriorityFilter,
			Policy:   &accept,
		},
	}
}

// load queues, on conn, the table, its sets (kept when they exist) and
// the forward chain with exactly these rules:
//
//	ct state established,related accept
//	ct status dnat accept
//	meta nfproto ipv4 ip saddr . ip daddr @allowed accept
//	meta nfproto ipv4 ip saddr @replicas ip daddr @replicas drop
func (rs ruleset) load(conn *nftables.Conn) error {
	conn.AddTable(rs.table)
	if err := conn.AddSet(rs.replicas, nil); err != nil {
		return fmt.Errorf("set %s: %w", setReplicas, err)
	}
	if err := conn.AddSet(rs.allowed, nil); err != nil {
		return fmt.Errorf("set %s: %w", setAllowed, err)
	}
	conn.AddChain(rs.forward)
	conn.FlushChain(rs.forward)
	for _, exprs := range [][]expr.Any{
		establishedAccept(),
		dnatAccept(),
		append(nftexpr.IPv4Only(reg1),
			nftexpr.IPv4Addr(nftexpr.IPv4Src, reg1), nftexpr.IPv4Addr(nftexpr.IPv4Dst, reg32b),
			&expr.Lookup{SourceRegister: reg1, SetName: rs.allowed.Name, SetID: rs.allowed.ID},
			&expr.Verdict{Kind: expr.VerdictAccept}),
		append(nftexpr.IPv4Only(reg1),
			nftexpr.IPv4Addr(nftexpr.IPv4Src, reg1),
			&expr.Lookup{SourceRegister: reg1, SetName: rs.replicas.Name, SetID: rs.replicas.ID},
			nftexpr.IPv4Addr(nftexpr.IPv4Dst, reg1),
			&expr.Lookup{SourceRegister: reg1, SetName: rs.replicas.Name, SetID: rs.replicas.ID},
			&expr.Verdict{Kind: expr.VerdictDrop}),
	} {
		conn.AddRule(&nftables.Rule{Table: rs.table, Chain: rs.forward, Exprs: exprs})
	}
	return nil
}

func addrElement(a netip.Addr) nftables.SetElement {
	b := a.As4()
	return nftables.SetElement{Key: b[:]}
}

func pairElement(p pair) nftables.SetElement {
	f, t := p.From.As4(), p.To.As4()
	return nftables.SetElement{Key: append(f[:], t[:]...)}
}

// missing returns, as set elements, the keys of a that b lacks (b may be
// nil).
func missing[K comparable](a, b map[K]bool, el func(K) nftables.SetElement) []nftables.SetElement {
	var out []nftables.SetElement
	for k := range a {
		if !b[k] {
			out = append(out, el(k))
		}
	}
	return out
}

// update queues the changes from have to want.
func (rs ruleset) update(conn *nftables.Conn, have, want *contents) error {
	// Deletions first: an address leaving and coming back in one change
	// must end up present.
	for _, step := range []struct {
		set *nftables.Set
		els []nftables.SetElement
		add bool
	}{
		{rs.allowed, missing(have.pairs, want.pairs, pairElement), false},
		{rs.replicas, missing(have.addrs, want.addrs, addrElement), false},
		{rs.replicas, missing(want.addrs, have.addrs, addrElement), true},
		{rs.allowed, missing(want.pairs, have.pairs, pairElement), true},
	} {
		for chunk := range slices.Chunk(step.els, elementsPerMessage) {
			var err error
			if step.add {
				err = conn.SetAddElements(step.set, chunk)
			} else {
				err = conn.SetDeleteElements(step.set, chunk)
			}
			if err != nil {
				return fmt.Errorf("set %s: %w", step.set.Name, err)
			}
		}
	}
	return nil
}

// replaceAll replaces both sets' contents with want: the flush and the
// first elements in one transaction, the rest in transactions of at most
// elementsPerTransaction elements (a netlink batch has a size limit). A
// replacement this large happens once, when jacod starts.
func (rs ruleset) replaceAll(want *contents) error {
	conn, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	conn.FlushSet(rs.replicas)
	conn.FlushSet(rs.allowed)
	queued := 0 // elements in conn's transaction
	for _, s := range []struct {
		set *nftables.Set
		els []nftables.SetElement
	}{
		{rs.replicas, missing(want.addrs, nil, addrElement)},
		{rs.allowed, missing(want.pairs, nil, pairElement)},
	} {
		for chunk := range slices.Chunk(s.els, elementsPerMessage) {
			if queued+len(chunk) > elementsPerTransaction {
				if err := conn.Flush(); err != nil {
					return err
				}
				if conn, err = nftables.New(); err != nil {
					return fmt.Errorf("nftables: %w", err)
				}
				queued = 0
			}
			if err := conn.SetAddElements(s.set, chunk); err != nil {
				return fmt.Errorf("set %s: %w", s.set.Name, err)
			}
			queued += len(chunk)
		}
	}
	return conn.Flush()
}

// elementsPerTransaction bounds one netlink batch (the socket refuses a
// larger send: "message too long").
const elementsPerTransaction = 8000

// elementsPerMessage bounds the set elements one netlink message carries:
// the kernel refuses a message past its size limit (seen as ENOENT once a
// service had ~57 replicas on a node: 3 000 pairs).
const elementsPerMessage = 1000

func establishedAccept() []expr.Any {
	return ctBitsAccept(expr.CtKeySTATE, expr.CtStateBitESTABLISHED|expr.CtStateBitRELATED)
}

// ctStatusDNAT is IPS_DST_NAT: the connection's destination was
// rewritten, i.e. it came in through a published port.
const ctStatusDNAT = 1 << 5

// dnatAccept passes connections to published ports: they are open to
// everyone, replicas of the node included (through the node's address).
func dnatAccept() []expr.Any { return ctBitsAccept(expr.CtKeySTATUS, ctStatusDNAT) }

// ctBitsAccept accepts packets whose conntrack key has any of mask's bits.
func ctBitsAccept(key expr.CtKey, mask uint32) []expr.Any {
	return append(nftexpr.CtAnyBits(reg1, key, mask), &expr.Verdict{Kind: expr.VerdictAccept})
}

// enableBridgeNetfilter makes bridged IPv4 traffic pass the inet hooks.
func enableBridgeNetfilter(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("bridge netfilter unavailable (%s missing; load the br_netfilter module)", path)
	}
	if err != nil {
		return fmt.Errorf("bridge netfilter: %w", err)
	}
	if strings.TrimSpace(string(b)) == "1" {
		return nil
	}
	if err := os.WriteFile(path, []byte("1\n"), 0o644); err != nil {
		return fmt.Errorf("bridge netfilter: turn on %s: %w", path, err)
	}
	return nil
}
