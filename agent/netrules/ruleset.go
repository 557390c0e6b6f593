package netrules

import (
	"fmt"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"

	"github.com/jaco-project/jaco/internal/nftexpr"
	"golang.org/x/sys/unix"
)

// Registers the rules use: nft's "reg 1" and the 32-bit register after
// its first four bytes, so a lookup of reg 1 reads the 8-byte
// concatenation of both.
const (
	reg1    = 1
	reg32b  = 9
	verdict = 0
)

// Offsets of the IPv4 source and destination in the network header.
const (
	saddr = 12
	daddr = 16
)

// ctStatusDNAT is IPS_DST_NAT: the connection's destination was
// rewritten (here: it was made to a VIP).
const ctStatusDNAT = 1 << 5

// elementsPerMessage bounds the set elements one netlink message carries
// (the kernel refuses larger messages; see agent/isolation).
const elementsPerMessage = 1000

// queueTable queues on conn the replacement of table t by the rules for
// c: the table is created if missing, deleted and created again, so the
// one transaction that carries it all swaps the whole ruleset at once.
// In nft's words (`nft list table inet NAME` prints just this):
//
//	chain forward { type filter hook forward priority filter
//		ct state established,related accept
//		ip daddr @networks ip daddr . ip saddr != @same drop
//		ip daddr @vips meta l4proto tcp reject with tcp reset
//		ip daddr @vips reject }
//	chain output { type filter hook output priority filter
//		(the two reject rules) }
//	chain prerouting { type nat hook prerouting priority dstnat
//		ip daddr vmap @dispatch }
//	chain nat-output { type nat hook output priority dstnat
//		ip daddr vmap @dispatch }
//	chain postrouting { type nat hook postrouting priority srcnat
//		ct status dnat ip saddr . ip daddr @hairpin masquerade
//		ct status dnat ip daddr . ip saddr != @same snat ip to ip daddr map @sources }
//	chain lb-N { dnat ip to ip daddr . numgen random mod N map @backends }
//
// and the routing mesh's rules (ingressRules).
func queueTable(conn *nftables.Conn, t *nftables.Table, c *contents, ingress *Ingress) error {
	conn.AddTable(t)
	conn.DelTable(t)
	conn.AddTable(t)

	ip4 := nftables.TypeIPAddr
	ip4pair := nftables.MustConcatSetType(ip4, ip4)
	sets := []struct {
		set *nftables.Set
		els []nftables.SetElement
	}{
		{&nftables.Set{Table: t, Name: "networks", KeyType: ip4, Interval: true}, c.networks},
		{&nftables.Set{Table: t, Name: "same", KeyType: ip4pair, Interval: true, Concatenation: true}, c.same},
		{&nftables.Set{Table: t, Name: "vips", KeyType: ip4}, c.vips},
		{&nftables.Set{Table: t, Name: "dispatch", KeyType: ip4, DataType: nftables.TypeVerdict, IsMap: true}, c.dispatch},
		{&nftables.Set{Table: t, Name: "backends", KeyType: nftables.MustConcatSetType(ip4, nftables.TypeMark),
			Concatenation: true, DataType: ip4, IsMap: true}, c.backends},
		{&nftables.Set{Table: t, Name: "hairpin", KeyType: ip4pair, Concatenation: true}, c.hairpin},
		{&nftables.Set{Table: t, Name: "sources", KeyType: ip4, Interval: true, DataType: ip4, IsMap: true}, c.sources},
		{&nftables.Set{Table: t, Name: "ingress-idle", KeyType: protoPort, Concatenation: true}, c.ingress.idle},
		{&nftables.Set{Table: t, Name: "ingress-dispatch", KeyType: protoPort, Concatenation: true,
			DataType: nftables.TypeVerdict, IsMap: true}, c.ingress.dispatch},
		{&nftables.Set{Table: t, Name: "ingress-backends", KeyType: protoPortNumber, Concatenation: true,
			DataType: addrPort, IsMap: true}, c.ingress.backends},
	}
	byName := map[string]*nftables.Set{}
	for i, s := range sets {
		// IDs name sets within one batch only. Giving them here keeps
		// nftables from numbering them with its package counter, which
		// it increments unsynchronized: a race with agent/isolation.
		s.set.ID = uint32(i + 1)
		if err := conn.AddSet(s.set, nil); err != nil {
			return fmt.Errorf("set %s: %w", s.set.Name, err)
		}
		byName[s.set.Name] = s.set
	}
	lookup := func(name string) *expr.Lookup {
		s := byName[name]
		return &expr.Lookup{SourceRegister: reg1, SetName: s.Name, SetID: s.ID}
	}

	// lb-N picks one of a VIP's N backends at random:
	//	dnat ip to ip daddr . numgen random mod N map @backends
	for _, n := range c.spreads {
		ch := conn.AddChain(&nftables.Chain{Table: t, Name: spreadChain(n)})
		pick := lookup("backends")
		pick.DestRegister, pick.IsDestRegSet = reg1, true
		conn.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: []expr.Any{
			nftexpr.IPv4Only(reg1)[0], nftexpr.IPv4Only(reg1)[1], // only for nft's listing: dispatch checked it
			nftexpr.IPv4Addr(daddr, reg1),
			&expr.Numgen{Register: reg32b, Modulus: uint32(n), Type: unix.NFT_NG_RANDOM},
			pick,
			&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: reg1},
		}})
	}

	mesh := ingressRulesOf(ingress, lookup)
	for _, n := range c.ingress.spreads {
		ch := conn.AddChain(&nftables.Chain{Table: t, Name: ingressChain(n)})
		conn.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: mesh.spread(n)})
	}

	// Elements after the chains: the dispatch maps' verdicts name them.
	for _, s := range sets {
		for chunk := range slices.Chunk(s.els, elementsPerMessage) {
			if err := conn.SetAddElements(s.set, chunk); err != nil {
				return fmt.Errorf("set %s: %w", s.set.Name, err)
			}
		}
	}

	refuse := [][]expr.Any{
		// ip daddr @vips meta l4proto tcp reject with tcp reset
		append(nftexpr.IPv4Only(reg1), nftexpr.IPv4Addr(daddr, reg1), lookup("vips"),
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: []byte{unix.IPPROTO_TCP}},
			&expr.Reject{Type: unix.NFT_REJECT_TCP_RST}),
		// ip daddr @vips reject (icmp port unreachable)
		append(nftexpr.IPv4Only(reg1), nftexpr.IPv4Addr(daddr, reg1), lookup("vips"),
			&expr.Reject{Type: unix.NFT_REJECT_ICMPX_UNREACH, Code: unix.NFT_REJECT_ICMPX_PORT_UNREACH}),
	}
	same := lookup("same")
	same.Invert = true
	separate := []expr.Any{ // ip daddr @networks ip daddr . ip saddr != @same drop
		nftexpr.IPv4Addr(daddr, reg1), lookup("networks"),
		nftexpr.IPv4Addr(daddr, reg1), nftexpr.IPv4Addr(saddr, reg32b), same,
		&expr.Verdict{Kind: expr.VerdictDrop},
	}
	// Replies pass: a replica's connections to the outside (or to the
	// node's other addresses) get answers from outside its network. Only
	// a connection's first packet meets the separation.
	replies := append(nftexpr.CtAnyBits(reg1, expr.CtKeySTATE, expr.CtStateBitESTABLISHED|expr.CtStateBitRELATED),
		&expr.Verdict{Kind: expr.VerdictAccept})
	dispatch := lookup("dispatch")
	dispatch.DestRegister, dispatch.IsDestRegSet = verdict, true
	toBackend := append(nftexpr.IPv4Only(reg1), nftexpr.IPv4Addr(daddr, reg1), dispatch) // ip daddr vmap @dispatch
	hairpin := append(nftexpr.IPv4Only(reg1), nftexpr.CtAnyBits(reg1, expr.CtKeySTATUS, ctStatusDNAT)...)
	hairpin = append(hairpin, nftexpr.IPv4Addr(saddr, reg1), nftexpr.IPv4Addr(daddr, reg32b), lookup("hairpin"), &expr.Masq{})

	// A DNATed connection whose source is not on the backend's network
	// can only be the node's own (the separation dropped any other before
	// postrouting, and the mesh's were SNATed before): it leaves from the
	// node's gateway on that network.
	source := lookup("sources")
	source.DestRegister, source.IsDestRegSet = reg1, true
	nodeSource := append(nftexpr.IPv4Only(reg1), nftexpr.CtAnyBits(reg1, expr.CtKeySTATUS, ctStatusDNAT)...)
	nodeSource = append(nodeSource, nftexpr.IPv4Addr(daddr, reg1), nftexpr.IPv4Addr(saddr, reg32b), same,
		nftexpr.IPv4Addr(daddr, reg1), source,
		&expr.NAT{Type: expr.NATTypeSourceNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: reg1})

	for _, ch := range []struct {
		name  string
		typ   nftables.ChainType
		hook  *nftables.ChainHook
		prio  *nftables.ChainPriority
		rules [][]expr.Any
	}{
		{"forward", nftables.ChainTypeFilter, nftables.ChainHookForward, nftables.ChainPriorityFilter,
			slices.Concat([][]expr.Any{replies}, mesh.forward, [][]expr.Any{append(nftexpr.IPv4Only(reg1), separate...)}, refuse)},
		{"output", nftables.ChainTypeFilter, nftables.ChainHookOutput, nftables.ChainPriorityFilter, refuse},
		{"input", nftables.ChainTypeFilter, nftables.ChainHookInput, nftables.ChainPriorityFilter, mesh.refuse},
		{"prerouting", nftables.ChainTypeNAT, nftables.ChainHookPrerouting, nftables.ChainPriorityNATDest,
			append([][]expr.Any{toBackend}, mesh.dispatch...)},
		{"nat-output", nftables.ChainTypeNAT, nftables.ChainHookOutput, nftables.ChainPriorityNATDest,
			append([][]expr.Any{toBackend}, mesh.dispatch...)},
		{"postrouting", nftables.ChainTypeNAT, nftables.ChainHookPostrouting, nftables.ChainPriorityNATSource,
			slices.Concat(mesh.snat, [][]expr.Any{hairpin, nodeSource})},
	} {
		accept := nftables.ChainPolicyAccept
		c := conn.AddChain(&nftables.Chain{Table: t, Name: ch.name, Type: ch.typ, Hooknum: ch.hook,
			Priority: ch.prio, Policy: &accept})
		for _, r := range ch.rules {
			conn.AddRule(&nftables.Rule{Table: t, Chain: c, Exprs: r})
		}
	}
	return nil
}
