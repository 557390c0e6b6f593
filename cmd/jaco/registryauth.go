package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/distribution/reference"
	"github.com/spf13/pflag"

	"github.com/jaco-project/jaco/api"
)

// errNoCredentials is a Docker config file without an entry for a
// registry: stack deploy lets such a service pull without.
var errNoCredentials = errors.New("no credentials")

// dockerHubKey is the key `docker login` files Docker Hub's credentials
// under.
const dockerHubKey = "https://index.docker.io/v1/"

// registryAuthFlags are --with-registry-auth and the Docker config file it
// reads (service create and update).
type registryAuthFlags struct {
	with   bool
	config string
}

func (f *registryAuthFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&f.with, "with-registry-auth", false,
		"send the credentials docker login stored for the image's registry (in the Docker config file) with the service; "+
			"the nodes pull with them, no one reads them back. An update without it keeps those the service has")
	fs.StringVar(&f.config, "registry-config", "",
		"the Docker config `FILE` --with-registry-auth reads (default $DOCKER_CONFIG/config.json, else ~/.docker/config.json)")
}

// apply sets spec's registry credentials when --with-registry-auth is
// given; the image must be set already.
func (f *registryAuthFlags) apply(spec *api.ServiceSpec) error {
	if !f.with {
		if f.config != "" {
			return errors.New("--registry-config is read only with --with-registry-auth")
		}
		return nil
	}
	if spec.GetImage() == "" {
		return errors.New("--with-registry-auth needs an image (a hook bundle is not pulled)")
	}
	path, err := dockerConfigPath(f.config)
	if err != nil {
		return err
	}
	auth, err := registryAuthFor(spec.GetImage(), path)
	if err != nil {
		return err
	}
	spec.RegistryAuth = auth
	return nil
}

// applyStack gives each of specs with an image the credentials the
// Docker config file holds for its registry when --with-registry-auth is
// given. A stack may mix private images with public ones, so a registry
// without credentials is a warning line, not an error, unless no image
// has any: then the flag asked for nothing that can be done.
func (f *registryAuthFlags) applyStack(warn io.Writer, specs []*api.ServiceSpec) error {
	if !f.with {
		if f.config != "" {
			return errors.New("--registry-config is read only with --with-registry-auth")
		}
		return nil
	}
	path, err := dockerConfigPath(f.config)
	if err != nil {
		return err
	}
	var missing []error
	found := false
	for _, spec := range specs {
		if spec.GetImage() == "" {
			continue
		}
		auth, err := registryAuthFor(spec.GetImage(), path)
		if errors.Is(err, errNoCredentials) {
			missing = append(missing, err)
			fmt.Fprintf(warn, "warning: service %s pulls %s without credentials: %v\n", spec.Name, spec.GetImage(), err)
			continue
		}
		if err != nil {
			return err
		}
		spec.RegistryAuth = auth
		found = true
	}
	if !found && len(missing) > 0 {
		return missing[0]
	}
	return nil
}

// dockerConfigPath is the file flag names, else Docker's own choice.
func dockerConfigPath(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if dir := os.Getenv("DOCKER_CONFIG"); dir != "" {
		return filepath.Join(dir, "config.json"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("--with-registry-auth: no home directory to find .docker/config.json in (give --registry-config FILE): %w", err)
	}
	return filepath.Join(home, ".docker", "config.json"), nil
}

// dockerConfig is what jaco reads of a Docker config file.
type dockerConfig struct {
	Auths       map[string]dockerAuth `json:"auths"`
	CredsStore  string                `json:"credsStore"`
	CredHelpers map[string]string     `json:"credHelpers"`
}

type dockerAuth struct {
	Auth          string `json:"auth"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
}

// registryAuthFor returns the credentials the Docker config file at path
// holds for image's registry.
func registryAuthFor(image, path string) (*api.RegistryAuth, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return nil, fmt.Errorf("--with-registry-auth: image %q: %w", image, err)
	}
	server := reference.Domain(named)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("--with-registry-auth: no Docker config file %s (log in with `docker login %s`, or give --registry-config FILE)", path, server)
	}
	// A file that is there and cannot be read is no usage mistake (1);
	// credentials that are not there are (2).
	if err != nil {
		return nil, failure{fmt.Errorf("--with-registry-auth: %w", err)}
	}
	var cfg dockerConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, failure{fmt.Errorf("--with-registry-auth: Docker config file %s: %w", path, err)}
	}
	entry, ok := cfg.lookup(server)
	if !ok {
		if helper := cfg.helperFor(server); helper != "" {
			return nil, fmt.Errorf("--with-registry-auth: %s keeps the credentials for %s in the credential helper %q, which jaco does not run; "+
				"write a config file with an \"auths\" entry for it and give --registry-config FILE", path, server, helper)
		}
		return nil, fmt.Errorf("--with-registry-auth: %s holds no credentials for %s (log in with `docker login %s`): %w", path, server, server, errNoCredentials)
	}
	auth := &api.RegistryAuth{Server: server, Username: entry.Username, Password: entry.Password, IdentityToken: entry.IdentityToken}
	if entry.Auth != "" {
		raw, err := base64.StdEncoding.DecodeString(entry.Auth)
		if err != nil {
			return nil, fmt.Errorf("--with-registry-auth: %s: the auth of %s is not base64: %w", path, server, err)
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return nil, fmt.Errorf("--with-registry-auth: %s: the auth of %s is not USER:PASSWORD", path, server)
		}
		auth.Username, auth.Password = user, pass
	}
	if auth.IdentityToken == "" && (auth.Username == "" || auth.Password == "") {
		return nil, fmt.Errorf("--with-registry-auth: %s: the entry for %s has no user name and password or identity token", path, server)
	}
	return auth, nil
}

// lookup finds server's entry. Keys are written as `docker login` wrote
// them: a host[:port], possibly as a URL ("https://host/v1/"), Docker Hub
// under dockerHubKey. The exact key wins over one that only normalizes
// to server; among those, the first in sorted order (deterministic).
func (c dockerConfig) lookup(server string) (dockerAuth, bool) {
	want := []string{server}
	if server == "docker.io" {
		want = []string{dockerHubKey, "index.docker.io", "docker.io", "registry-1.docker.io"}
	}
	for _, k := range want {
		if e, ok := c.Auths[k]; ok {
			return e, true
		}
	}
	keys := make([]string, 0, len(c.Auths))
	for k := range c.Auths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		host := hostOfKey(k)
		for _, w := range want {
			if host == hostOfKey(w) {
				return c.Auths[k], true
			}
		}
	}
	return dockerAuth{}, false
}

// helperFor is the credential helper the config names for server.
func (c dockerConfig) helperFor(server string) string {
	if h := c.CredHelpers[server]; h != "" {
		return h
	}
	return c.CredsStore
}

// hostOfKey strips a key's scheme and path.
func hostOfKey(k string) string {
	k = strings.TrimPrefix(strings.TrimPrefix(k, "https://"), "http://")
	host, _, _ := strings.Cut(k, "/")
	return host
}
