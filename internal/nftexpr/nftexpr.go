// Package nftexpr holds the nftables expressions both of jaco's rulesets
// build rules from (agent/isolation, agent/netrules), written once.
package nftexpr

import (
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Offsets of the addresses in an IPv4 header.
const (
	IPv4Src = 12
	IPv4Dst = 16
)

// IPv4Only matches IPv4 packets (an inet table sees IPv6 too), using reg.
func IPv4Only(reg uint32) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: reg},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg, Data: []byte{unix.NFPROTO_IPV4}},
	}
}

// IPv4Addr loads the 4-byte IPv4 address at offset of the network header
// (IPv4Src or IPv4Dst) into reg.
func IPv4Addr(offset, reg uint32) *expr.Payload {
	return &expr.Payload{DestRegister: reg, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4}
}

// CtAnyBits matches packets whose conntrack key (state, status, mark) has
// any of mask's bits, using reg.
func CtAnyBits(reg uint32, key expr.CtKey, mask uint32) []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: reg, Key: key},
		&expr.Bitwise{
			SourceRegister: reg, DestRegister: reg, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(mask),
			Xor:  binaryutil.NativeEndian.PutUint32(0),
		},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: reg, Data: binaryutil.NativeEndian.PutUint32(0)},
	}
}
