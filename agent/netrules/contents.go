package netrules

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
)

// contents are the elements of the table's sets and maps for one State:
// the pure half of the translation, which the unit tests read.
type contents struct {
	networks []nftables.SetElement // interval set: start, and end+1 flagged IntervalEnd
	same     []nftables.SetElement // S.first . S.first through S.last . S.last
	vips     []nftables.SetElement // every VIP
	dispatch []nftables.SetElement // VIP with N backends → goto lb-N
	backends []nftables.SetElement // VIP . i → its i-th backend, i < N
	hairpin  []nftables.SetElement // b . b for every backend b
	spreads  []int                 // the distinct N, ascending: one lb-N chain each
	sources  []nftables.SetElement // interval map: network with a gateway → gateway
	ingress  ingressContents
}

// contentsOf translates a normalized state.
func contentsOf(s State) *contents {
	c := &contents{}
	for _, r := range mergeRanges(s.Networks) {
		c.networks = append(c.networks, nftables.SetElement{Key: be(r.first)})
		if r.last != ^uint32(0) {
			c.networks = append(c.networks, nftables.SetElement{Key: be(r.last + 1), IntervalEnd: true})
		}
	}
	for _, p := range s.Networks {
		r := rangeOf(p)
		c.same = append(c.same, nftables.SetElement{
			Key:    concat(be(r.first), be(r.first)),
			KeyEnd: concat(be(r.last), be(r.last)),
		})
	}
	for _, p := range s.Networks {
		j := slices.IndexFunc(s.Gateways, p.Contains)
		if j < 0 {
			continue
		}
		r, gw := rangeOf(p), s.Gateways[j].As4()
		c.sources = append(c.sources, nftables.SetElement{Key: be(r.first), Val: gw[:]})
		// Every range has its end, even where the next one starts: the
		// kernel takes a start after a start as an overlap.
		if r.last != ^uint32(0) {
			c.sources = append(c.sources, nftables.SetElement{Key: be(r.last + 1), IntervalEnd: true})
		}
	}
	total := 0
	for _, v := range s.VIPs {
		total += len(v.Backends)
	}
	c.vips = make([]nftables.SetElement, 0, len(s.VIPs))
	c.backends = make([]nftables.SetElement, 0, total)
	hairpin := make(map[netip.Addr]bool, total)
	verdicts := map[int]*expr.Verdict{} // one per N, shared by its VIPs
	for _, v := range s.VIPs {
		vip := v.Addr.As4()
		c.vips = append(c.vips, nftables.SetElement{Key: vip[:]})
		n := len(v.Backends)
		if n == 0 {
			continue // not dispatched: the filter chains refuse it
		}
		if verdicts[n] == nil {
			verdicts[n] = &expr.Verdict{Kind: expr.VerdictGoto, Chain: spreadChain(n)}
			c.spreads = append(c.spreads, n)
		}
		c.dispatch = append(c.dispatch, nftables.SetElement{Key: vip[:], VerdictData: verdicts[n]})
		for i, b := range v.Backends {
			ba := b.As4()
			// numgen writes its number in host byte order.
			c.backends = append(c.backends, nftables.SetElement{
				Key: concat(vip[:], binaryutil.NativeEndian.PutUint32(uint32(i))),
				Val: ba[:],
			})
			if !hairpin[b] {
				hairpin[b] = true
				c.hairpin = append(c.hairpin, nftables.SetElement{Key: concat(ba[:], ba[:])})
			}
		}
	}
	slices.Sort(c.spreads)
	c.ingress = ingressContentsOf(s.Ingress)
	slices.Sort(c.ingress.spreads)
	return c
}

// spreadChain names the chain that spreads over n backends.
func spreadChain(n int) string { return fmt.Sprintf("lb-%d", n) }

// addrRange is an inclusive range of IPv4 addresses.
type addrRange struct{ first, last uint32 }

func rangeOf(p netip.Prefix) addrRange {
	a := p.Masked().Addr().As4()
	first := binary.BigEndian.Uint32(a[:])
	return addrRange{first, first | uint32(uint64(1)<<(32-p.Bits())-1)}
}

// mergeRanges turns sorted, non-overlapping prefixes into ranges with
// adjacent ones joined (fewer elements; the set only answers "in some
// network?").
func mergeRanges(ps []netip.Prefix) []addrRange {
	var out []addrRange
	for _, p := range ps {
		r := rangeOf(p)
		if n := len(out); n > 0 && out[n-1].last != ^uint32(0) && out[n-1].last+1 == r.first {
			out[n-1].last = r.last
			continue
		}
		out = append(out, r)
	}
	return out
}

func be(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

func concat(a, b []byte) []byte { return append(slices.Clip(a), b...) }
