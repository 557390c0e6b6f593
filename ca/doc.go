// Package ca is the cluster's certificate authority: the root CA, node keys
// and certificates, and the TLS configurations built from them. The join and
// operator tokens, and the TLS configuration of a client that has only a
// token, are package ca/token.
//
// Trust model:
//
//   - Each cluster has one self-signed Ed25519 root CA (NewRootCA). Its
//     private key lives only in the raft state (the ClusterInit entry and
//     snapshots), which is encrypted at rest with everything else. It is
//     never written to a file: SaveNodeFiles takes the CA certificate, the
//     node certificate and the node key, and has no parameter for the CA key.
//   - The leader's Signer issues node certificates. The node's identity is
//     carried in the subject: CN = node id, OU = role, O = cluster id. The
//     signer overrides whatever subject and SANs the CSR asked for, so a
//     joiner cannot choose its own identity.
//   - Nodes talk mutual TLS (ServerTLSConfig, ClientTLSConfig). Operators and
//     joiners have no certificate yet: they pin the CA by the SHA-256
//     fingerprint carried in their token (token.PinnedTLSConfig) and prove
//     themselves with the token's secret, of which the cluster stores only
//     a hash.
//
// The library underneath is cfssl (initca, csr, signer/local); its logger is
// silenced so it does not write to the daemon's output.
package ca
