package netrules

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
)

// bigState has networks 10.N.0.0/16 and vips VIPs spread over them (in
// each network's top block), each with backends replicas; shift moves
// every VIP's backends by one address, so two states differ everywhere.
func bigState(networks, vips, backends, shift int) State {
	var s State
	for n := range networks {
		s.Networks = append(s.Networks, netip.MustParsePrefix(fmt.Sprintf("10.%d.0.0/16", n)))
	}
	for i := range vips {
		n, k := i%networks, i/networks
		v := VIP{Addr: netip.AddrFrom4([4]byte{10, byte(n), 255, byte(193 + k)})}
		for j := range backends {
			h := 2 + k*backends + j + shift
			v.Backends = append(v.Backends, netip.AddrFrom4([4]byte{10, byte(n), byte(h / 250), byte(h%250 + 2)}))
		}
		s.VIPs = append(s.VIPs, v)
	}
	return s
}

// BenchmarkApply measures a full replace of the table (every iteration
// loads a state that differs from the last) and the no-change path.
func BenchmarkApply(b *testing.B) {
	for _, size := range []struct{ networks, vips, backends int }{
		{100, 500, 3},
		{100, 2000, 10},
	} {
		states := [2]State{bigState(size.networks, size.vips, size.backends, 0),
			bigState(size.networks, size.vips, size.backends, 1)}
		name := fmt.Sprintf("networks=%d/vips=%d/backends=%d", size.networks, size.vips, size.backends)
		b.Run(name+"/replace", func(b *testing.B) {
			benchApply(b, func(i int) State { return states[i%2] })
		})
		b.Run(name+"/unchanged", func(b *testing.B) {
			benchApply(b, func(int) State { return states[0] })
		})
	}
}

func benchApply(b *testing.B, state func(i int) State) {
	needRoot(b)
	n := newNetns(b, "bench")
	r := New(testTable)
	b.Cleanup(func() { n.do(r.Close) })
	n.must(b, func() error {
		ctx := context.Background()
		if err := r.Apply(ctx, state(1)); err != nil {
			return err
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := r.Apply(ctx, state(i)); err != nil {
				return err
			}
			i++
		}
		return nil
	})
}
