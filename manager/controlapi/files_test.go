package controlapi

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
)

func createSecret(t *testing.T, s *Server, name, data string) *api.Secret {
	t.Helper()
	resp, err := s.CreateSecret(context.Background(), &api.CreateSecretRequest{Spec: &api.FileSpec{Name: name, Data: []byte(data)}})
	if err != nil {
		t.Fatalf("create secret %s: %v", name, err)
	}
	return resp.Secret
}

// A secret's data is stored, and no reply ever carries it.
func TestSecretsLifecycle(t *testing.T) {
	s, st := newServiceServer(t)
	ctx := context.Background()
	sec := createSecret(t, s, "db-pass", "hunter2")
	if sec.GetId() == "" || sec.GetSpec().GetName() != "db-pass" || sec.GetSpec().GetData() != nil {
		t.Fatalf("create returned %v; want an id, the name and no data", sec)
	}
	st.View(func(tx store.ReadTx) {
		if got := tx.GetSecret(sec.Id).GetSpec().GetData(); !bytes.Equal(got, []byte("hunter2")) {
			t.Errorf("stored data %q, want hunter2", got)
		}
	})

	_, err := s.CreateSecret(ctx, &api.CreateSecretRequest{Spec: &api.FileSpec{Name: "db-pass", Data: []byte("x")}})
	wantRefused(t, "a taken name", err, reason.AlreadyExists, "secret named db-pass exists")
	_, err = s.CreateSecret(ctx, &api.CreateSecretRequest{Spec: &api.FileSpec{Name: "big", Data: make([]byte, MaxFileBytes+1)}})
	wantRefused(t, "data over 500 KiB", err, reason.LimitExceeded, "the limit is 512000")
	createSecret(t, s, "just-fits", strings.Repeat("x", MaxFileBytes))
	_, err = s.CreateSecret(ctx, &api.CreateSecretRequest{Spec: &api.FileSpec{Name: "Bad Name"}})
	wantRefused(t, "a bad name", err, reason.InvalidSpec, "secret name")

	for _, which := range []string{sec.Id, "db-pass"} {
		got, err := s.GetSecret(ctx, &api.GetSecretRequest{Secret: which})
		if err != nil || got.Secret.GetId() != sec.Id || got.Secret.GetSpec().GetData() != nil {
			t.Fatalf("inspect by %s: %v, %v; want the secret without data", which, got, err)
		}
	}
	list, err := s.ListSecrets(ctx, &api.ListSecretsRequest{})
	if err != nil || len(list.Secrets) != 2 {
		t.Fatalf("list: %v, %v; want two secrets", list, err)
	}
	for _, l := range list.Secrets {
		if l.GetSpec().GetData() != nil {
			t.Errorf("list returned the data of %s", l.Spec.Name)
		}
	}

	if _, err := s.RemoveSecret(ctx, &api.RemoveSecretRequest{Secret: "db-pass"}); err != nil {
		t.Fatal(err)
	}
	_, err = s.RemoveSecret(ctx, &api.RemoveSecretRequest{Secret: "db-pass"})
	wantRefused(t, "removing it twice", err, reason.NotFound)
	_, err = s.GetSecret(ctx, &api.GetSecretRequest{Secret: "db-pass"})
	wantRefused(t, "inspecting a removed one", err, reason.NotFound)
}

// A config's inspect shows its data; its list does not.
func TestConfigsShowDataOnInspect(t *testing.T) {
	s, _ := newServiceServer(t)
	ctx := context.Background()
	if _, err := s.CreateConfig(ctx, &api.CreateConfigRequest{Spec: &api.FileSpec{Name: "nginx.conf", Data: []byte("server {}")}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetConfig(ctx, &api.GetConfigRequest{Config: "nginx.conf"})
	if err != nil || string(got.Config.GetSpec().GetData()) != "server {}" {
		t.Fatalf("config inspect: %v, %v; want its data", got, err)
	}
	list, err := s.ListConfigs(ctx, &api.ListConfigsRequest{})
	if err != nil || len(list.Configs) != 1 || list.Configs[0].GetSpec().GetData() != nil {
		t.Fatalf("config list: %v, %v; want one, without data", list, err)
	}
	_, err = s.CreateConfig(ctx, &api.CreateConfigRequest{Spec: &api.FileSpec{Name: "nginx.conf"}})
	wantRefused(t, "a taken config name", err, reason.AlreadyExists, "config named nginx.conf")
}

// A service's references resolve to ids by name; a file a spec or the
// spec a rollback returns to references cannot be removed.
func TestServiceFileReferences(t *testing.T) {
	s, st := newServiceServer(t)
	ctx := context.Background()
	sec := createSecret(t, s, "db-pass", "hunter2")
	cfg, err := s.CreateConfig(ctx, &api.CreateConfigRequest{Spec: &api.FileSpec{Name: "app.yml", Data: []byte("a: 1")}})
	if err != nil {
		t.Fatal(err)
	}

	spec := imageSpec("web")
	spec.Secrets = []*api.FileReference{{Name: "nope"}}
	_, err = s.CreateService(ctx, &api.CreateServiceRequest{Spec: spec})
	wantRefused(t, "an unknown secret", err, reason.NotFound, `no secret named "nope"`)
	spec.Secrets = nil
	spec.Configs = []*api.FileReference{{Name: "nope"}}
	_, err = s.CreateService(ctx, &api.CreateServiceRequest{Spec: spec})
	wantRefused(t, "an unknown config", err, reason.NotFound, `no config named "nope"`)

	spec.Secrets = []*api.FileReference{{Name: "db-pass", Id: "stale"}}
	spec.Configs = []*api.FileReference{{Name: "app.yml"}}
	create(t, s, spec)
	st.View(func(tx store.ReadTx) {
		got := tx.FindServiceByName("web").GetSpec()
		if r := got.GetSecrets()[0]; r.Id != sec.Id || r.Target != "db-pass" || r.Mode != 0o444 {
			t.Errorf("stored secret reference %v; want id %s, target db-pass, mode 0444", r, sec.Id)
		}
		if r := got.GetConfigs()[0]; r.Id != cfg.Config.Id || r.Target != "/app.yml" || r.Mode != 0o444 {
			t.Errorf("stored config reference %v; want id %s, target /app.yml, mode 0444", r, cfg.Config.Id)
		}
	})

	_, err = s.RemoveSecret(ctx, &api.RemoveSecretRequest{Secret: "db-pass"})
	wantRefused(t, "removing a secret in use", err, reason.SecretInUse, "used by services web")
	_, err = s.RemoveConfig(ctx, &api.RemoveConfigRequest{Config: "app.yml"})
	wantRefused(t, "removing a config in use", err, reason.ConfigInUse, "used by services web")
	got, err := s.GetSecret(ctx, &api.GetSecretRequest{Secret: "db-pass"})
	if err != nil || strings.Join(got.Services, ",") != "web" {
		t.Fatalf("secret inspect: %v, %v; want it used by web", got, err)
	}

	// Updated off it, web may still roll back onto it: it stays.
	moved := imageSpec("web")
	if _, err := s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "web", Spec: moved}); err != nil {
		t.Fatal(err)
	}
	_, err = s.RemoveSecret(ctx, &api.RemoveSecretRequest{Secret: "db-pass"})
	wantRefused(t, "removing the secret a rollback returns to", err, reason.SecretInUse, "web")

	if _, err := s.RemoveService(ctx, &api.RemoveServiceRequest{Service: "web"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RemoveSecret(ctx, &api.RemoveSecretRequest{Secret: "db-pass"}); err != nil {
		t.Fatalf("removing an unused secret: %v", err)
	}
	if _, err := s.RemoveConfig(ctx, &api.RemoveConfigRequest{Config: cfg.Config.Id}); err != nil {
		t.Fatalf("removing an unused config by id: %v", err)
	}
}
