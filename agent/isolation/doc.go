// Package isolation keeps the service networks of one node apart with an
// nftables ruleset loaded over netlink (github.com/google/nftables; no
// `nft` binary).
//
// Contract:
//   - A replica may open connections to replicas of its own service, of
//     the services its spec depends_on, of services whose spec sets
//     network.open, and of services whose network.allow_from names its
//     service. Any other new connection from one replica to another is
//     dropped. Replies of allowed connections pass (conntrack).
//   - Traffic that is not replica-to-replica is left alone: the node and
//     the outside reach replicas and published ports as before, and
//     replicas reach the node and the outside world. Published ports are
//     open to everyone, replicas of the same node included (a connection
//     through the node's address and a published port was DNATed, and
//     DNATed connections pass).
//   - The ruleset is one table per node, `inet <name>` (the node's CNI
//     network name, jaco-<hash of the node id>). Its forward chain holds
//     four fixed rules; what changes as replicas come and go is two sets
//     it refers to: "replicas" (every attached replica's address) and
//     "allowed" (source . destination address pairs that may connect).
//     Each change replaces both sets' contents in one netlink transaction,
//     so no packet sees a half-updated policy.
//   - Load creates the table (or takes over the one a previous jacod left,
//     keeping its sets until the first change). When it fails (a kernel
//     without nf_tables, no CAP_NET_ADMIN, no bridge netfilter) the ruleset
//     is unavailable for the life of the process: Usable returns why, and
//     Attach refuses every replica. The node reports isolation_unavailable
//     and the scheduler places no replicas on it.
//
// Design notes:
//   - Containers of one node share one Linux bridge, so their traffic to
//     each other is bridged, not routed. The kernel's bridge netfilter
//     (br_netfilter, net.bridge.bridge-nf-call-iptables=1) passes bridged
//     IPv4 frames through the inet forward hook, where conntrack works; a
//     bridge-family table would need nf_conntrack_bridge, which many
//     kernels lack. Load turns the sysctl on (as Docker and Kubernetes do).
//   - The policy is per node: it knows the replicas this node runs. Nodes
//     do not route to each other's container subnets, so replicas of
//     different nodes meet only through published ports, which are not
//     isolated.
//   - Hook-bundle replicas are processes in the node's own network
//     namespace; they have no address of their own and are not isolated.
//   - IPv4 only: the node's container subnet is IPv4.
package isolation
