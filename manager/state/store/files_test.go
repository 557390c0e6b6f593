package store

import (
	"bytes"
	"errors"
	"testing"

	"github.com/jaco-project/jaco/api"
)

func secret(id, name string, data []byte) *api.Secret {
	return &api.Secret{Id: id, Meta: meta(0, 10, 10), Spec: &api.FileSpec{Name: name, Data: data}}
}

func config(id, name string, data []byte) *api.Config {
	return &api.Config{Id: id, Meta: meta(0, 10, 10), Spec: &api.FileSpec{Name: name, Data: data}}
}

// Secrets and configs are stored whole, found by name (unique within their
// own kind only) and survive a snapshot.
func TestSecretsAndConfigsRoundTrip(t *testing.T) {
	src := newStore(t)
	err := src.Apply(1, req(
		act(t, create, secret("s1", "db-pass", []byte("hunter2"))),
		act(t, create, config("c1", "db-pass", []byte("port=5432"))),
		act(t, create, config("c2", "nginx.conf", []byte("server {}"))),
	))
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Apply(2, req(act(t, create, secret("s2", "db-pass", nil)))); !errors.Is(err, ErrExists) {
		t.Errorf("a second secret named db-pass: %v, want ErrExists", err)
	}

	dst := newStore(t)
	if err := dst.Restore(src.Save(), 1); err != nil {
		t.Fatal(err)
	}
	sameContent(t, src, dst)
	dst.View(func(tx ReadTx) {
		if got := tx.FindSecretByName("db-pass").GetSpec().GetData(); !bytes.Equal(got, []byte("hunter2")) {
			t.Errorf("secret data after restore = %q", got)
		}
		if got := tx.FindConfigByName("nginx.conf").GetId(); got != "c2" {
			t.Errorf("config nginx.conf is %q, want c2", got)
		}
		if len(tx.ListSecrets()) != 1 || len(tx.ListConfigs()) != 2 {
			t.Errorf("restored %d secrets, %d configs; want 1, 2", len(tx.ListSecrets()), len(tx.ListConfigs()))
		}
	})
	if err := dst.Apply(2, req(act(t, api.StoreAction_KIND_DELETE, &api.Secret{Id: "s1", Meta: &api.Meta{Version: 1}}))); err != nil {
		t.Fatal(err)
	}
	dst.View(func(tx ReadTx) {
		if tx.GetSecret("s1") != nil || tx.FindSecretByName("db-pass") != nil {
			t.Error("deleted secret still found")
		}
	})
}
