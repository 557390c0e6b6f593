package backup

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/ca"
)

// testBackup is a small cluster: one manager, one worker, one service.
func testBackup(t *testing.T) *Backup {
	t.Helper()
	caCert, caKey, err := ca.NewRootCA("cluster-1")
	if err != nil {
		t.Fatal(err)
	}
	meta := func(v uint64) *api.Meta { return &api.Meta{Version: v} }
	return &Backup{
		ClusterID: "cluster-1", Index: 42, Term: 7, TakenAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Snapshot: &api.RaftSnapshot{
			Store: &api.StoreSnapshot{
				Clusters: []*api.Cluster{{Id: "cluster-1", Meta: meta(1), CaCertPem: caCert, CaKeyPem: caKey, OperatorTokenHash: []byte("hash")}},
				Nodes: []*api.Node{
					{Id: "node-a", Meta: meta(2), Hostname: "mgr-1", Address: "10.0.0.1:4242", Role: api.NodeRole_NODE_ROLE_MANAGER, RaftId: 5, Labels: map[string]string{"zone": "a"}},
					{Id: "node-b", Meta: meta(9), Hostname: "worker-1", Address: "10.0.0.2:4242", Role: api.NodeRole_NODE_ROLE_WORKER},
				},
				Services: []*api.Service{{Id: "svc-1", Meta: meta(30), Spec: &api.ServiceSpec{Name: "web"}, SpecVersion: 3}},
			},
			Members:        []*api.RaftMember{{RaftId: 5, NodeId: "node-a", Address: "10.0.0.1:4242"}},
			RemovedMembers: []*api.RaftMember{{RaftId: 3, NodeId: "node-old"}},
		},
	}
}

func sealedFile(t *testing.T, b *Backup) ([]byte, Key) {
	t.Helper()
	payload, err := b.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	file, err := Seal(payload, k)
	if err != nil {
		t.Fatal(err)
	}
	return file, k
}

func TestSealedBackupRoundTrips(t *testing.T) {
	b := testBackup(t)
	file, k := sealedFile(t, b)
	if bytes.Contains(file, b.Snapshot.Store.Clusters[0].CaKeyPem[30:60]) || bytes.Contains(file, []byte("worker-1")) {
		t.Fatal("sealed file holds store content in clear")
	}
	parsed, err := ParseKey(k.String())
	if err != nil {
		t.Fatalf("ParseKey(%q): %v", k.String(), err)
	}
	got, err := Decode(file, parsed)
	if err != nil {
		t.Fatal(err)
	}
	if got.ClusterID != b.ClusterID || got.Index != b.Index || got.Term != b.Term || !got.TakenAt.Equal(b.TakenAt) {
		t.Errorf("header = %+v, want %+v", got, b)
	}
	if !proto.Equal(got.Snapshot, b.Snapshot) {
		t.Errorf("snapshot differs after the round trip")
	}
}

func TestOpenRefusesBadFiles(t *testing.T) {
	file, k := sealedFile(t, testBackup(t))
	other, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		c := bytes.Clone(file)
		c[i] ^= 0x40
		return c
	}
	for _, tc := range []struct {
		name string
		file []byte
		key  Key
		want error
	}{
		{"empty", nil, k, ErrTruncated},
		{"cut in the magic", file[:5], k, ErrTruncated},
		{"cut after the key id", file[:16], k, ErrTruncated},
		{"cut in the body", file[:len(file)/2], k, ErrCorrupted},
		{"last byte missing", file[:len(file)-1], k, ErrCorrupted},
		{"byte flipped in the body", flip(len(file) / 2), k, ErrCorrupted},
		{"byte flipped in the tag", flip(len(file) - 1), k, ErrCorrupted},
		{"wrong key", file, other, ErrWrongKey},
		{"not a backup", []byte("hello, this is a text file and not a backup at all"), k, ErrNotBackup},
		{"newer format", append([]byte("JACOBAK\x02"), file[8:]...), k, ErrNotBackup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Decode(tc.file, tc.key)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Decode = %v, %v; want %v", b, err, tc.want)
			}
		})
	}
}

func TestParseKeyRefusesOtherText(t *testing.T) {
	k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	s := k.String()
	for _, in := range []string{"", "JBK1-", s[:len(s)-1], s + "A", "XBK1-" + s[5:], s[5:], "JBK1-" + s[5:len(s)-1] + "!"} {
		if _, err := ParseKey(in); !errors.Is(err, ErrBadKey) {
			t.Errorf("ParseKey(%q) = %v, want ErrBadKey", in, err)
		}
	}
	if got, err := ParseKey("  " + s + "\n"); err != nil || got != k {
		t.Errorf("ParseKey with white space = %v, %v", got, err)
	}
}

func TestUnmarshalRefusesUnrestorablePayloads(t *testing.T) {
	for _, tc := range []struct {
		name  string
		alter func(b *Backup)
	}{
		{"no cluster id", func(b *Backup) { b.ClusterID = "" }},
		{"zero index", func(b *Backup) { b.Index = 0 }},
		{"zero term", func(b *Backup) { b.Term = 0 }},
		{"no Cluster object", func(b *Backup) { b.Snapshot.Store.Clusters = nil }},
		{"another cluster's object", func(b *Backup) { b.Snapshot.Store.Clusters[0].Id = "cluster-2" }},
		{"no CA key", func(b *Backup) { b.Snapshot.Store.Clusters[0].CaKeyPem = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := testBackup(t)
			tc.alter(b)
			data, err := b.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Unmarshal(data); !errors.Is(err, ErrFormat) {
				t.Fatalf("Unmarshal = %v, want ErrFormat", err)
			}
		})
	}
	data, err := testBackup(t).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{0, 7, 12, 20} {
		if _, err := Unmarshal(data[:cut]); !errors.Is(err, ErrFormat) {
			t.Errorf("Unmarshal of %d bytes = %v, want ErrFormat", cut, err)
		}
	}
}
