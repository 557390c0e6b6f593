// Package backupfile is the format of a jaco backup: the payload the
// leader streams (Backup, Marshal, Unmarshal) and the file the CLI seals
// it into with a backup key printed once (Key, Seal, Open, Decode). The
// store holds the cluster CA key and every token hash, so a file never
// holds them in clear. The CLI links this package, so it stays free of
// raft and the store.
//
// See docs/adr/0010-backup.md for the format and key handling.
package backupfile

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// payloadMagic opens an unsealed backup (what the server streams); the
// last byte is the payload format version.
var payloadMagic = []byte("JACOSNP\x01")

// maxHeader bounds the JSON header so a corrupted length cannot make
// Unmarshal allocate gigabytes.
const maxHeader = 1 << 16

// ErrFormat is wrapped by every error about a malformed backup.
var ErrFormat = errors.New("not a jaco backup")

// Backup is one consistent copy of a cluster's replicated state.
type Backup struct {
	// ClusterID is the cluster the state belongs to.
	ClusterID string
	// Index is the raft index the store was read at, Term the leader's
	// term then: the restored member starts its log there.
	Index, Term uint64
	// TakenAt is when the leader read the store.
	TakenAt time.Time
	// Snapshot holds the store, the members and the removed members.
	Snapshot *api.RaftSnapshot
}

// header is the part of a Backup kept readable (once unsealed) without
// decoding the store.
type header struct {
	ClusterID string    `json:"cluster_id"`
	Index     uint64    `json:"index"`
	Term      uint64    `json:"term"`
	TakenAt   time.Time `json:"taken_at"`
}

// Marshal encodes b: magic, big-endian uint32 header length, JSON header,
// then the RaftSnapshot in deterministic protobuf.
func (b *Backup) Marshal() ([]byte, error) {
	h, err := json.Marshal(header{ClusterID: b.ClusterID, Index: b.Index, Term: b.Term, TakenAt: b.TakenAt.UTC()})
	if err != nil {
		return nil, fmt.Errorf("encode backup header: %w", err)
	}
	snap, err := proto.MarshalOptions{Deterministic: true}.Marshal(b.Snapshot)
	if err != nil {
		return nil, fmt.Errorf("encode backup snapshot: %w", err)
	}
	var buf bytes.Buffer
	buf.Grow(len(payloadMagic) + 4 + len(h) + len(snap))
	buf.Write(payloadMagic)
	_ = binary.Write(&buf, binary.BigEndian, uint32(len(h))) // bytes.Buffer writes cannot fail
	buf.Write(h)
	buf.Write(snap)
	return buf.Bytes(), nil
}

// Unmarshal decodes what Marshal wrote and checks that it can be restored:
// a cluster id, a positive index and term, and exactly that cluster's
// Cluster object in the store.
func Unmarshal(data []byte) (*Backup, error) {
	if len(data) < len(payloadMagic)+4 || !bytes.Equal(data[:len(payloadMagic)], payloadMagic) {
		return nil, fmt.Errorf("%w: unknown payload format", ErrFormat)
	}
	rest := data[len(payloadMagic):]
	hlen := binary.BigEndian.Uint32(rest)
	rest = rest[4:]
	if hlen > maxHeader || int(hlen) > len(rest) {
		return nil, fmt.Errorf("%w: header length %d does not fit", ErrFormat, hlen)
	}
	var h header
	if err := json.Unmarshal(rest[:hlen], &h); err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrFormat, err)
	}
	var snap api.RaftSnapshot
	if err := proto.Unmarshal(rest[hlen:], &snap); err != nil {
		return nil, fmt.Errorf("%w: snapshot: %w", ErrFormat, err)
	}
	b := &Backup{ClusterID: h.ClusterID, Index: h.Index, Term: h.Term, TakenAt: h.TakenAt, Snapshot: &snap}
	if err := b.check(); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *Backup) check() error {
	if b.ClusterID == "" || b.Index == 0 || b.Term == 0 {
		return fmt.Errorf("%w: cluster %q, index %d, term %d", ErrFormat, b.ClusterID, b.Index, b.Term)
	}
	if _, err := b.Cluster(); err != nil {
		return err
	}
	return nil
}

// Cluster returns the backup's Cluster object (CA, operator token hash).
func (b *Backup) Cluster() (*api.Cluster, error) {
	clusters := b.Snapshot.GetStore().GetClusters()
	if len(clusters) != 1 || clusters[0].GetId() != b.ClusterID {
		return nil, fmt.Errorf("%w: want the one Cluster object of cluster %s, found %d", ErrFormat, b.ClusterID, len(clusters))
	}
	c := clusters[0]
	if len(c.CaCertPem) == 0 || len(c.CaKeyPem) == 0 {
		return nil, fmt.Errorf("%w: cluster %s has no CA certificate and key", ErrFormat, b.ClusterID)
	}
	return c, nil
}
