// Package storage keeps a raft member's log and snapshots on disk.
//
// It wraps etcd's WAL (storage/wal) and snapshotter (etcdserver/api/snap),
// though it writes snapshot files itself, in the snapshotter's format
// (snapfile.go, docs/adr/0045), and seals what they would otherwise write
// in clear: the Data of every entry and of every snapshot passes through
// an encryption.Sealer, bound to its index and term. Hard state, entry
// types, indexes and terms stay in clear; they carry no cluster secret and
// etcd's WAL needs them to find and verify records.
//
// Durability rules:
//   - Save fsyncs before it returns (etcd's WAL syncs when a batch carries
//     entries or a changed hard state), so the Ready loop may send messages
//     and apply entries afterwards.
//   - A snapshot file is written, synced and renamed into place, its
//     directory synced, before its WAL record, so the WAL never points at
//     a snapshot that is not there or is torn.
//   - A new log is created in a temporary directory and renamed into place
//     with its first entries already in it: the data directory holds either
//     no raft state or a complete bootstrap.
//   - At open, the whole log is read before anything is written. A torn
//     last record (a crash mid-write) is then cut off, because it was never
//     acknowledged, unless the cut would leave the log short of its own
//     commit index (ErrLostAcknowledged). Any other damage (ErrDamaged)
//     stops the open with an error naming the file and offset. A refused
//     open changes no file, and committed entries are never dropped
//     silently.
package storage
