// Package backup takes whole-cluster backups on the leader.
//
// A backup is the leader's store at one applied raft index, with the raft
// membership and term of that moment. Server reads it and streams it,
// encoded as backupfile.Backup, to the CLI over TLS; the CLI seals it into
// a file (package backupfile). Scheduler, a leader subsystem, takes the
// same backups on a schedule and seals them into files on the leader's
// machine itself (docs/adr/0037-scheduled-backups.md). Package restore turns a backup into the
// data dir of a stopped, empty node that starts as the sole manager of the
// same cluster.
//
// The format and the restore are subpackages so that the CLI, which
// writes and restores backup files, does not link the leader's services.
// See docs/adr/0010-backup.md for the file format and key handling.
package backup
