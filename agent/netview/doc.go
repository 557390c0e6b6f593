// Package netview turns the store's word on one node's overlay networks
// (the node object with its blocks, the networks, their services'
// endpoints, as the latest session message carries them) into what the
// node's parts need: the runtimes' attachments (exec.Attachment), the DNS
// server's records (dns.Records) and the addresses it answers on, and the
// network rules' state. It is pure: no I/O, the same view gives the same
// answers, so each translation is tested on its own (docs/adr/0026).
package netview
