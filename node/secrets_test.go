package node

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/ca/token"
	"github.com/jaco-project/jaco/internal/datadir"
	"github.com/jaco-project/jaco/manager/encryption"
)

// TestNothingSecretInClearOnDiskUnderAutolock: with autolock on, a stopped
// manager's data dir holds none of the secrets a manager knows, in any of
// the forms they travel in: the operator token, the join tokens of both
// roles, the unlock key, the CA key, the data keys (the one from before
// autolock too), the node's TLS key and its overlay (WireGuard) key.
// Backup keys never reach the daemon (the CLI makes them and seals the
// file). Without autolock the data and
// TLS keys are in clear by design (TestInitPersistsAndSealsSecrets checks
// the rest).
func TestNothingSecretInClearOnDiskUnderAutolock(t *testing.T) {
	dir := t.TempDir()
	n, stop := startNode(t, dir)
	c := localClient(t, dir)
	init, err := c.Cluster.Init(ctxT(t), &api.InitClusterRequest{})
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string][]byte{}
	addToken := func(what, text string) {
		tok, err := token.Parse(text)
		if err != nil {
			t.Fatalf("%s %q: %v", what, text, err)
		}
		secrets[what] = []byte(text)
		secrets[what+" secret"] = []byte(tok.Secret)
	}
	addToken("operator token", init.OperatorToken)
	for _, role := range []api.NodeRole{api.NodeRole_NODE_ROLE_WORKER, api.NodeRole_NODE_ROLE_MANAGER} {
		jt, err := c.Control.IssueJoinToken(ctxT(t), &api.IssueJoinTokenRequest{Role: role})
		if err != nil {
			t.Fatal(err)
		}
		addToken(role.String()+" join token", jt.Token)
	}
	clearKeys, err := encryption.ReadKeyFile(datadir.Dir(dir).DataKeys(), nil)
	if err != nil {
		t.Fatal(err)
	}
	secrets["data key from before autolock"] = clearKeys.Current[:]
	keyPEM, err := os.ReadFile(filepath.Join(datadir.Dir(dir).Node(), ca.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		t.Fatal("node key is not PEM before autolock")
	}
	secrets["TLS private key"] = block.Bytes
	// The overlay's WireGuard key, made when the agent started.
	wgPEM, err := os.ReadFile(datadir.Dir(dir).OverlayKey())
	if err != nil {
		t.Fatalf("overlay key before autolock: %v", err)
	}
	if block, _ = pem.Decode(wgPEM); block == nil || len(block.Bytes) != 32 {
		t.Fatal("overlay key is not a PEM block of 32 bytes before autolock")
	}
	secrets["overlay private key"] = block.Bytes

	on := true
	resp, err := c.Control.UpdateCluster(ctxT(t), &api.UpdateClusterRequest{Autolock: &on})
	if err != nil {
		t.Fatal(err)
	}
	kek, err := encryption.ParseUnlockKey(resp.UnlockKey)
	if err != nil {
		t.Fatal(err)
	}
	secrets["unlock key"] = []byte(resp.UnlockKey)
	secrets["unlock key bytes"] = kek[:]
	deadline := time.Now().Add(30 * time.Second)
	for n.keys.UnlockKey() == nil || !n.keys.Settled() {
		if time.Now().After(deadline) {
			t.Fatal("keys not sealed 30 s after autolock was turned on")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cluster := n.Manager().Cluster()
	secrets["CA private key"] = cluster.CaKeyPem
	stop()

	keys, err := encryption.ReadKeyFile(datadir.Dir(dir).DataKeys(), &kek)
	if err != nil {
		t.Fatal(err)
	}
	secrets["data key"] = keys.Current[:]
	var files int
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		files++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for what, s := range secrets {
			for _, form := range [][]byte{s, []byte(hex.EncodeToString(s)), []byte(base64.StdEncoding.EncodeToString(s))} {
				if bytes.Contains(b, form) {
					t.Errorf("%s holds the %s in clear", path, what)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 4 {
		t.Fatalf("walked %d files; want the keys, the certificates and the raft state", files)
	}

	// What is sealed opens again with the unlock key, unchanged.
	n2, _ := startNode(t, dir)
	if _, err := localClient(t, dir).Node.Unlock(ctxT(t), &api.UnlockNodeRequest{UnlockKey: resp.UnlockKey}); err != nil {
		t.Fatal(err)
	}
	if err := n2.Manager().WaitReady(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if got := n2.Manager().Cluster(); !proto.Equal(got, cluster) {
		t.Fatalf("cluster after unlock differs:\n got %v\nwant %v", got, cluster)
	}
}
