// Package dns is a node's DNS server for service discovery
// (docs/adr/0026-overlay-networks.md). Replicas reach
// it through their resolv.conf, which holds only its nameserver line and
// "options ndots:0": names are never expanded with search domains, so
// the server sees exactly the name the replica asked for.
//
// # What it answers
//
// A and AAAA queries, case-insensitively, with or without the trailing
// dot:
//
//   - NAME and NAME.NETWORK: the service's virtual IP on the asker's
//     network or on the named one (its replicas' addresses when the
//     service has no VIP, endpoint mode dnsrr);
//   - tasks.NAME and tasks.NAME.NETWORK: the addresses of the service's
//     running and healthy replicas on that network, all of them, in an
//     order rotated by one on every query (round robin for clients that
//     take the first).
//
// A name is the server's own when it names a service known on any
// network, alone or followed by a known network's name, with or without
// "tasks.". An own name with no address for the asker gets NXDOMAIN; one
// with addresses of the other family only gets an empty NOERROR answer.
// Every other name goes to the host's resolvers (its resolv.conf, read
// again when it changes), over UDP and again over TCP when truncated,
// within a deadline; their answer is passed back, and SERVFAIL when none
// answers in time. ANY, zone transfers and classes other than IN are
// REFUSED; replies are cut to the asker's UDP size with the TC bit set,
// so the asker retries over TCP.
//
// # Why TTL 0
//
// Answers come from the agent's local view of the store and follow it:
// a replica that stops or turns unhealthy must leave DNS within 1 s
// (docs/operator-guide.md, "Names"). A cached answer would outlive that, so
// every answer has TTL 0 and a replica asks again on its next connection.
// Asking costs a round trip to its own node's bridge; BenchmarkQuery
// measures it.
//
// # Who asks
//
// Visibility follows networks: a replica sees only the services on the
// networks it is attached to, and a service on another network is
// NXDOMAIN to it. The server tells the asker by the query's source
// address: the replica's address on the network it asked through, which
// lies in that network's subnet. Records.Askers may add a replica's other
// networks, so a replica on two networks sees both. A name on several of
// the asker's networks resolves on the one it asked through first. The
// server trusts the source address; keeping replicas from spoofing one on
// the bridges is the network ruleset's job, not this package's.
//
// # Updates
//
// The agent builds a whole Records from its view and hands it to
// SetRecords, which swaps the compiled table atomically: a query sees the
// table before an update or after it, never part of one.
package dns
