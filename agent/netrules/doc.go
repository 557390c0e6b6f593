// Package netrules is one node's nftables rules for overlay networks
// (ADR 0026): networks kept apart, and virtual IPs (VIPs) that spread new
// connections over a service's replicas. It loads them over netlink
// (github.com/google/nftables; no `nft` binary), beside the isolation
// ruleset (agent/isolation), from a State the node computes from its view
// of the store.
//
// Contract:
//   - Separation: a new connection forwarded by the node to an address in
//     one of State.Networks is dropped unless it comes from the same
//     network. Replicas on different networks cannot connect, and the
//     outside reaches no replica's overlay address. Replies and related
//     ICMP errors of connections that passed are not checked again, so a
//     replica's connections out of its network get their answers.
//     Traffic that is not forwarded (to and from the node itself) and
//     traffic to addresses outside every network are left alone.
//   - VIPs: a new connection of any protocol to a VIP with backends, from
//     a replica (prerouting) or from a process of the node (output), is
//     DNATed to one of the backends, picked at random per connection; the
//     port is kept. A VIP without backends refuses at once: TCP gets a
//     reset, anything else an ICMP port unreachable. A replica reaching
//     itself through a VIP is masqueraded to its gateway address, or the
//     answer would come from its own address and be dropped. A process
//     of the node reaching a VIP leaves with the node's gateway address
//     on the VIP's network (State.Gateways) as source, since its own
//     (jaco0's, say) is in no network and the backend's node would drop
//     it; on a network where the node has no gateway it keeps its source.
//   - Ingress (the routing mesh, State.Ingress): a new TCP or UDP
//     connection to a published port on any local address of the node
//     (fib daddr type local), from outside (prerouting) or from a process
//     of the node (output), is DNATed to one of the port's backends at
//     random, at the target port, and marked (IngressCtMark); it leaves
//     with the node's gateway on the ingress network as source, so the
//     backend, local or on another node, answers through this node. The
//     separation lets marked connections into the ingress subnet and no
//     other: a VIP's DNAT from outside its network is still dropped. A
//     port without backends, or every port while the node has no
//     gateway on the ingress network, refuses at once (input: TCP reset,
//     else ICMP port unreachable). Not meshed: loopback destinations
//     (127/8; a DNATed packet from 127.0.0.1 could not leave the node:
//     route_localnet is left off) and the node's addresses inside
//     overlay networks (its gateways, where replicas' DNS answers
//     whatever the mesh publishes). Published ports shadow anything of
//     the node's listening on them.
//   - Apply loads a whole State in one netlink transaction: the table is
//     deleted and made again in the same batch, so no packet sees half a
//     state and nothing of an older state stays behind. Connections made
//     before keep their backend (conntrack decides after a connection's
//     first packet; removing a backend does not cut its open
//     connections); new connections only ever see the new backends. For
//     UDP a "connection" is a flow: a client that keeps its socket (or
//     whose new socket happens to get a recent flow's source port) keeps
//     a removed backend until the flow idles out (30 s unanswered, 120 s
//     once answered, the kernel's defaults); deleting those conntrack
//     entries, as kube-proxy does, is not done here.
//     Applying the state loaded last sends nothing but a check that the
//     table is still there (it is loaded again if someone deleted it).
//     A refused State (not IPv4, overlapping networks, a VIP given twice,
//     a gateway in no network or two on one; an ingress subnet that is
//     not one of the networks, an ingress gateway or backend outside it,
//     a port given twice, a protocol not tcp or udp, port 0)
//     leaves the loaded rules as they were.
//   - Apply turns on, in the caller's network namespace,
//     net.ipv4.ip_forward (the node routes between its bridges and jaco0)
//     and net.bridge.bridge-nf-call-iptables (bridged IPv4 frames pass the
//     inet hooks: the separation sees replicas on one bridge, and
//     conntrack undoes a VIP's DNAT on an answer that stays on the
//     bridge). Without the br_netfilter module the second does not exist
//     and Apply fails saying so.
//   - Close deletes the table; a later Apply loads it again.
//
// What the node must provide:
//   - Replicas reach their whole network, VIPs included, through their
//     bridge's gateway (CNI routes the subnet to it): a VIP is never on
//     the replicas' link.
//   - Bridge ports in hairpin mode (CNI's hairpinMode), so a replica that
//     lands on itself through a VIP gets the packet back out its port.
//   - One table name per node, unique on the host (tests run several
//     nodes on one kernel). Apply replaces a table of that name that a
//     previous jacod left.
//   - A kernel with nf_tables, inet-family NAT (5.2) and concatenated
//     interval sets (5.6), and the br_netfilter module; CAP_NET_ADMIN.
//
// Design notes:
//   - Everything that grows with the state is a set or map, so a packet
//     costs a few lookups whatever the number of networks and VIPs:
//     "networks" (interval set of subnets) and "same" (S . S ranges,
//     concatenated intervals) for the separation; "vips" for the refusal;
//     "dispatch" (VIP → goto lb-N) and "backends" (VIP . i → address) for
//     the spreading, with one lb-N chain per distinct number of backends
//     N doing `dnat ip to ip daddr . numgen random mod N map @backends`;
//     "hairpin" (b . b) for the masquerade; "sources" (interval map of
//     network → gateway) for the node's own connections. That SNAT rule
//     needs no "locally generated" test: any other DNATed connection
//     from outside the backend's network was dropped in forward already,
//     but the mesh's, SNATed by their own rule first. The mesh: "ingress-
//     dispatch" (proto . port → goto ilb-N), "ingress-backends" (proto .
//     port . i → address . target port) and "ingress-idle" (ports that
//     refuse), the same shape as the VIPs'.
//   - A full replace instead of a difference: the cost is dominated by
//     the kernel's commit, which flushing and refilling sets costs as much
//     as deleting the table (measured: about 8–16 ms either way). See
//     BenchmarkApply: about 25 ms for 100 networks and 500 VIPs × 3
//     backends, 120 ms for 2 000 VIPs × 10.
//   - One batch must carry the whole state, so the netlink socket's send
//     buffer is raised to 16 MiB (SO_SNDBUFFORCE): some 500 000 set
//     elements.
//   - The same kernel table sees IPv6, which it leaves alone: overlay
//     networks are IPv4.
//
// Limits:
//   - The isolation ruleset accepts every DNATed connection (it lets
//     published ports through): were overlay addresses ever in its sets,
//     VIP connections would pass its depends_on policy.
package netrules
