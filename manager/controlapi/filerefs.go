package controlapi

import (
	"path"
	"strings"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
)

// The defaults a reference gets when the spec is accepted, as Swarm's:
// a secret is a file named after it under /run/secrets, a config is
// /NAME, both readable by all, since images read them after dropping
// root (postgres reads POSTGRES_PASSWORD_FILE as its own user; the
// replica's mount namespace keeps them from other replicas). uid and gid
// default to 0 by being 0.
const (
	defaultSecretMode = 0o444
	defaultConfigMode = 0o444
	// secretsDir is where a container replica sees its secrets; a config
	// may not take a path a secret has there.
	secretsDir = "/run/secrets"
)

// fillFileRefs checks spec's secret and config references alone and fills
// in their defaults (target, mode), so the stored spec says exactly what
// each replica gets. Whether the names exist is resolveFileRefs' job.
func fillFileRefs(spec *api.ServiceSpec) error {
	targets := map[string]string{} // path in the replica -> what holds it
	for _, r := range spec.GetSecrets() {
		if err := fillRef("secret", r, r.GetName(), defaultSecretMode); err != nil {
			return err
		}
		if r.Target == "." || r.Target == ".." || strings.Contains(r.Target, "/") {
			return invalid("secret %s: target %q must be a file name (no '/', not '.' or '..'): it goes under %s", r.Name, r.Target, secretsDir)
		}
		if err := claim(targets, path.Join(secretsDir, r.Target), "secret "+r.Name); err != nil {
			return err
		}
	}
	for _, r := range spec.GetConfigs() {
		if err := fillRef("config", r, "/"+r.GetName(), defaultConfigMode); err != nil {
			return err
		}
		if !path.IsAbs(r.Target) || path.Clean(r.Target) != r.Target || r.Target == "/" {
			return invalid("config %s: target %q must be a clean absolute file path (like /etc/app.conf)", r.Name, r.Target)
		}
		if err := claim(targets, r.Target, "config "+r.Name); err != nil {
			return err
		}
	}
	return nil
}

// fillRef checks r's name and mode and fills its target and mode when
// unset.
func fillRef(kind string, r *api.FileReference, target string, mode uint32) error {
	if r == nil {
		return invalid("an empty %s reference", kind)
	}
	if err := checkName(kind, r.Name); err != nil {
		return err
	}
	if r.Target == "" {
		r.Target = target
	}
	if r.Mode == 0 {
		r.Mode = mode
	}
	if r.Mode&^0o777 != 0 {
		return invalid("%s %s: mode %#o: want permission bits only (at most 0777)", kind, r.Name, r.Mode)
	}
	return nil
}

// claim records that what holds p, refused when something else does.
func claim(targets map[string]string, p, what string) error {
	if other, ok := targets[p]; ok {
		return invalid("%s and %s both target %s", other, what, p)
	}
	targets[p] = what
	return nil
}

// resolveFileRefs fills each reference's id from its name, refusing a
// name that is not a secret (config). The name decides: a spec sent again
// with an id of a secret since removed and created anew gets the new one.
func resolveFileRefs(tx store.ReadTx, spec *api.ServiceSpec) error {
	for _, r := range spec.GetSecrets() {
		s := tx.FindSecretByName(r.GetName())
		if s == nil {
			return reason.Error(codes.NotFound, reason.NotFound,
				"service %s: no secret named %q (jaco secret create %s FILE)", spec.GetName(), r.GetName(), r.GetName())
		}
		r.Id = s.Id
	}
	for _, r := range spec.GetConfigs() {
		c := tx.FindConfigByName(r.GetName())
		if c == nil {
			return reason.Error(codes.NotFound, reason.NotFound,
				"service %s: no config named %q (jaco config create %s FILE)", spec.GetName(), r.GetName(), r.GetName())
		}
		r.Id = c.Id
	}
	return nil
}
