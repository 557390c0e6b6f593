package api

import (
	"net"
	"strconv"
)

// OverlayEndpointOf is where other nodes reach n's overlay link: its
// advertise host at the port its description publishes. ok is false when
// n published no usable overlay end.
func OverlayEndpointOf(n *Node) (endpoint string, ok bool) {
	o := n.GetDescription().GetOverlay()
	if o == nil || o.GetUnavailable() || len(o.GetPublicKey()) != 32 {
		return "", false
	}
	host, _, err := net.SplitHostPort(n.GetAddress())
	if err != nil || host == "" {
		return "", false
	}
	return net.JoinHostPort(host, strconv.Itoa(int(o.GetPort()))), true
}
