package controlapi

import (
	"context"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

// A secret's data goes in once, by CreateSecret, and out only to the
// nodes running replicas that reference it (the dispatcher): no reply
// here carries it. A config's data is not secret: GetConfig returns it,
// as docker config inspect does; ListConfigs leaves it out to stay small.

// CreateSecret records a secret; its name is unique among secrets.
func (s *Server) CreateSecret(ctx context.Context, req *api.CreateSecretRequest) (*api.CreateSecretResponse, error) {
	sec, err := secretKind.create(ctx, s, req.GetSpec())
	if err != nil {
		return nil, err
	}
	sec.Spec = withoutData(sec.Spec)
	return &api.CreateSecretResponse{Secret: sec}, nil
}

// GetSecret returns a secret, without its data, and the services using it.
func (s *Server) GetSecret(_ context.Context, req *api.GetSecretRequest) (*api.GetSecretResponse, error) {
	resp := &api.GetSecretResponse{}
	s.store.View(func(tx store.ReadTx) {
		if resp.Secret = secretKind.find(tx, req.GetSecret()); resp.Secret != nil {
			resp.Services = secretKind.users(tx, resp.Secret.Id, false)
		}
	})
	if resp.Secret == nil {
		return nil, notFound("secret", req.GetSecret())
	}
	resp.Secret.Spec = withoutData(resp.Secret.Spec)
	return resp, nil
}

// ListSecrets lists every secret in the local store, in id order, without
// their data.
func (s *Server) ListSecrets(_ context.Context, _ *api.ListSecretsRequest) (*api.ListSecretsResponse, error) {
	resp := &api.ListSecretsResponse{}
	s.store.View(func(tx store.ReadTx) { resp.Secrets = tx.ListSecrets() })
	for _, sec := range resp.Secrets {
		sec.Spec = withoutData(sec.Spec)
	}
	return resp, nil
}

// RemoveSecret deletes a secret no service references.
func (s *Server) RemoveSecret(ctx context.Context, req *api.RemoveSecretRequest) (*api.RemoveSecretResponse, error) {
	if err := secretKind.remove(ctx, s, req.GetSecret()); err != nil {
		return nil, err
	}
	return &api.RemoveSecretResponse{}, nil
}

// CreateConfig records a config; its name is unique among configs.
func (s *Server) CreateConfig(ctx context.Context, req *api.CreateConfigRequest) (*api.CreateConfigResponse, error) {
	cfg, err := configKind.create(ctx, s, req.GetSpec())
	if err != nil {
		return nil, err
	}
	cfg.Spec = withoutData(cfg.Spec) // the caller sent it
	return &api.CreateConfigResponse{Config: cfg}, nil
}

// GetConfig returns a config, its data included, and the services using
// it.
func (s *Server) GetConfig(_ context.Context, req *api.GetConfigRequest) (*api.GetConfigResponse, error) {
	resp := &api.GetConfigResponse{}
	s.store.View(func(tx store.ReadTx) {
		if resp.Config = configKind.find(tx, req.GetConfig()); resp.Config != nil {
			resp.Services = configKind.users(tx, resp.Config.Id, false)
		}
	})
	if resp.Config == nil {
		return nil, notFound("config", req.GetConfig())
	}
	return resp, nil
}

// ListConfigs lists every config in the local store, in id order, without
// their data.
func (s *Server) ListConfigs(_ context.Context, _ *api.ListConfigsRequest) (*api.ListConfigsResponse, error) {
	resp := &api.ListConfigsResponse{}
	s.store.View(func(tx store.ReadTx) { resp.Configs = tx.ListConfigs() })
	for _, cfg := range resp.Configs {
		cfg.Spec = withoutData(cfg.Spec)
	}
	return resp, nil
}

// RemoveConfig deletes a config no service references.
func (s *Server) RemoveConfig(ctx context.Context, req *api.RemoveConfigRequest) (*api.RemoveConfigResponse, error) {
	if err := configKind.remove(ctx, s, req.GetConfig()); err != nil {
		return nil, err
	}
	return &api.RemoveConfigResponse{}, nil
}
