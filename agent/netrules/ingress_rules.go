package netrules

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"

	"github.com/jaco-project/jaco/internal/nftexpr"
	"golang.org/x/sys/unix"
)

// The third 32-bit register: a lookup of reg 1 with a 12-byte key reads
// reg1, reg32b and this one.
const reg32c = 10

// Key and data types of the ingress sets: protocol . port, and the
// backend's address . target port.
var (
	protoPort       = nftables.MustConcatSetType(nftables.TypeInetProto, nftables.TypeInetService)
	protoPortNumber = nftables.MustConcatSetType(nftables.TypeInetProto, nftables.TypeInetService, nftables.TypeMark)
	addrPort        = nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetService)
)

// ingressContents are the elements of the ingress sets.
type ingressContents struct {
	idle     []nftables.SetElement // proto . port of every port that refuses
	dispatch []nftables.SetElement // proto . port → goto ilb-N
	backends []nftables.SetElement // proto . port . i → i-th backend . target
	spreads  []int                 // distinct N, ascending: one ilb-N chain each
}

func ingressContentsOf(in *Ingress) ingressContents {
	var c ingressContents
	if in == nil {
		return c
	}
	verdicts := map[int]*expr.Verdict{}
	for _, p := range in.Ports {
		key := protoPortKey(p)
		n := len(p.Backends)
		if n == 0 || !in.Gateway.IsValid() {
			c.idle = append(c.idle, nftables.SetElement{Key: key})
			continue
		}
		if verdicts[n] == nil {
			verdicts[n] = &expr.Verdict{Kind: expr.VerdictGoto, Chain: ingressChain(n)}
			c.spreads = append(c.spreads, n)
		}
		c.dispatch = append(c.dispatch, nftables.SetElement{Key: key, VerdictData: verdicts[n]})
		for i, b := range p.Backends {
			a := b.As4()
			c.backends = append(c.backends, nftables.SetElement{
				Key: concat(key, binaryutil.NativeEndian.PutUint32(uint32(i))),
				Val: concat(a[:], portBytes(p.Target)),
			})
		}
	}
	return c
}

// protoPortKey is p's key in the ingress sets: each part padded to 4
// bytes, as the registers hold them.
func protoPortKey(p Published) []byte {
	proto := byte(unix.IPPROTO_TCP)
	if p.Proto == "udp" {
		proto = unix.IPPROTO_UDP
	}
	return concat([]byte{proto, 0, 0, 0}, portBytes(p.Port))
}

// portBytes is port as a register holds it: big endian, padded to 4
// bytes.
func portBytes(port uint16) []byte { return append(binary.BigEndian.AppendUint16(nil, port), 0, 0) }

// ingressChain names the chain that spreads a port over n backends.
func ingressChain(n int) string { return fmt.Sprintf("ilb-%d", n) }

// protoPortLoad loads meta l4proto . th dport into reg 1.
func protoPortLoad() []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg1},
		&expr.Payload{DestRegister: reg32b, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
	}
}

// meshed matches IPv4 packets the mesh publishes to: to a local address
// of the node, not loopback (a DNATed packet from 127.0.0.1 could not
// leave the node) and not in any network (the node's gateways there
// serve DNS and the like to replicas, whatever the mesh publishes).
func meshed(networks *expr.Lookup) []expr.Any {
	notIn := *networks
	notIn.Invert = true
	return append(nftexpr.IPv4Only(reg1),
		&expr.Fib{Register: reg1, ResultADDRTYPE: true, FlagDADDR: true},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: binaryutil.NativeEndian.PutUint32(unix.RTN_LOCAL)},
		nftexpr.IPv4Addr(daddr, reg1),
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: []byte{255, 0, 0, 0}, Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: reg1, Data: []byte{127, 0, 0, 0}},
		nftexpr.IPv4Addr(daddr, reg1), &notIn,
	)
}

// inSubnet matches packets whose destination is in p.
func inSubnet(p netip.Prefix) []expr.Any {
	var m [4]byte
	binary.BigEndian.PutUint32(m[:], uint32(uint64(0xffffffff)<<(32-p.Bits())))
	a := p.Masked().Addr().As4()
	return []expr.Any{
		nftexpr.IPv4Addr(daddr, reg1),
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: m[:], Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: a[:]},
	}
}

// setIngressMark is `ct mark set ct mark or IngressCtMark`.
func setIngressMark() []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: reg1, Key: expr.CtKeyMARK},
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(^uint32(IngressCtMark)),
			Xor:  binaryutil.NativeEndian.PutUint32(IngressCtMark)},
		&expr.Ct{Register: reg1, Key: expr.CtKeyMARK, SourceRegister: true},
	}
}

// ingressRules are the mesh's rules for in (nil: none but the lookups
// of empty sets), by chain:
//
//	prerouting, nat-output: (meshed) meta l4proto . th dport vmap @ingress-dispatch
//	ilb-N: ct mark set ct mark or IngressCtMark
//		dnat ip to meta l4proto . th dport . numgen random mod N map @ingress-backends
//	input: (meshed) meta l4proto . th dport @ingress-idle (the two rejects)
//	forward, first after replies: ct mark & IngressCtMark != 0 ip daddr <subnet> accept
//	postrouting, first: ct mark & IngressCtMark != 0 ip daddr <subnet> snat ip to <gateway>
type ingressRules struct {
	dispatch, refuse [][]expr.Any
	forward, snat    [][]expr.Any
	spread           func(n int) []expr.Any
}

func ingressRulesOf(in *Ingress, lookup func(string) *expr.Lookup) ingressRules {
	var r ingressRules
	vmap := lookup("ingress-dispatch")
	vmap.DestRegister, vmap.IsDestRegSet = verdict, true
	r.dispatch = [][]expr.Any{append(append(meshed(lookup("networks")), protoPortLoad()...), vmap)}
	idle := append(append(meshed(lookup("networks")), protoPortLoad()...), lookup("ingress-idle"))
	r.refuse = [][]expr.Any{
		append(append(idle[:len(idle):len(idle)],
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: []byte{unix.IPPROTO_TCP}}),
			&expr.Reject{Type: unix.NFT_REJECT_TCP_RST}),
		append(idle[:len(idle):len(idle)],
			&expr.Reject{Type: unix.NFT_REJECT_ICMPX_UNREACH, Code: unix.NFT_REJECT_ICMPX_PORT_UNREACH}),
	}
	r.spread = func(n int) []expr.Any {
		pick := lookup("ingress-backends")
		pick.DestRegister, pick.IsDestRegSet = reg1, true
		return append(append(setIngressMark(), protoPortLoad()...),
			&expr.Numgen{Register: reg32c, Modulus: uint32(n), Type: unix.NFT_NG_RANDOM},
			pick,
			&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: reg1, RegProtoMin: reg32b})
	}
	if in == nil {
		return r
	}
	marked := append(nftexpr.IPv4Only(reg1), nftexpr.CtAnyBits(reg1, expr.CtKeyMARK, IngressCtMark)...)
	marked = append(marked, inSubnet(in.Subnet)...)
	r.forward = [][]expr.Any{append(marked[:len(marked):len(marked)], &expr.Verdict{Kind: expr.VerdictAccept})}
	if in.Gateway.IsValid() {
		gw := in.Gateway.As4()
		r.snat = [][]expr.Any{append(marked[:len(marked):len(marked)],
			&expr.Immediate{Register: reg1, Data: gw[:]},
			&expr.NAT{Type: expr.NATTypeSourceNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: reg1})}
	}
	return r
}
