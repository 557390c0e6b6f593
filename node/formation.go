package node

import (
	"fmt"
	"slices"
)

// startFormation starts the formation the flags ask for, if any, under
// the node's loop context: it stops when the node stops. What can only be
// checked once the advertise address is known is checked here, so a
// mistake stops the daemon at start, not after the formation delay.
func (n *Node) startFormation() error {
	var run func()
	switch {
	case n.cfg.Bootstrap:
		run = func() { n.runOrdinalFormation(n.loopCtx) }
	case n.cfg.formation.static != nil && !n.initialized():
		i := slices.IndexFunc(n.cfg.formation.static, func(m staticMember) bool { return m.Name == n.cfg.NodeName })
		if addr := n.cfg.formation.static[i].Addr; addr != n.advertise {
			return fmt.Errorf("%w: --initial-cluster gives %s the address %s, but it advertises %s (--advertise-addr)",
				ErrInvalidConfig, n.cfg.NodeName, addr, n.advertise)
		}
		run = func() { n.runStaticFormation(n.loopCtx) }
	default:
		return nil
	}
	n.loopWG.Add(1)
	go func() {
		defer n.loopWG.Done()
		run()
	}()
	return nil
}
