// Package backup takes and restores whole-cluster backups.
//
// A backup is the leader's store at one applied raft index, with the raft
// membership and term of that moment (Backup, encoded by Marshal). The
// leader streams it to the CLI over TLS (Server); the CLI seals it into a
// file with a random backup key that it prints once (Seal, Open): the
// store holds the cluster CA key and every token hash, so the file never
// holds them in clear. Restore turns a backup into the data dir of a
// stopped, empty node that starts as the sole manager of the same cluster.
//
// See docs/adr/0010-backup.md for the file format and key handling.
package backup
