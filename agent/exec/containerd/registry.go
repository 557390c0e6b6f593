package containerd

import (
	"errors"
	"net/http"

	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	remoteerrors "github.com/containerd/containerd/v2/core/remotes/errors"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
)

// dockerHubHosts are the hosts docker.io's images are fetched from: the
// credentials a spec holds for "docker.io" are offered to them.
var dockerHubHosts = map[string]bool{"registry-1.docker.io": true, "index.docker.io": true}

// resolver returns the resolver a pull uses: HTTPS only (never plain
// HTTP, whatever the host), the node's system trust store, and auth's
// credentials offered to auth's server alone. A registry's token server
// on another host gets them only because that registry named it in its
// challenge, as with any Docker client.
func resolver(auth *api.RegistryAuth) remotes.Resolver {
	authorizer := docker.NewDockerAuthorizer(docker.WithAuthCreds(credentials(auth)))
	return docker.NewResolver(docker.ResolverOptions{
		Hosts: docker.ConfigureDefaultRegistries(
			docker.WithAuthorizer(authorizer),
			docker.WithPlainHTTP(func(string) (bool, error) { return false, nil }),
		),
	})
}

// credentials returns the authorizer's credentials callback: auth's user
// and password (or identity token, sent as the refresh token: an empty
// user name with a secret) for auth's server, nothing for other hosts.
func credentials(auth *api.RegistryAuth) func(host string) (string, string, error) {
	return func(host string) (string, string, error) {
		if auth.GetServer() == "" || !sameRegistry(auth.GetServer(), host) {
			return "", "", nil
		}
		if tok := auth.GetIdentityToken(); tok != "" {
			return "", tok, nil
		}
		return auth.GetUsername(), auth.GetPassword(), nil
	}
}

// sameRegistry says whether host is where server's images come from.
func sameRegistry(server, host string) bool {
	if server == host {
		return true
	}
	return server == "docker.io" && dockerHubHosts[host]
}

// pullError wraps a failed pull of image for the agent: denied when the
// registry answered 401 or 403 (or the authorizer had nothing to answer
// a challenge with).
func pullError(image string, err error) error {
	denied := errors.Is(err, docker.ErrInvalidAuthorization)
	var us remoteerrors.ErrUnexpectedStatus
	if errors.As(err, &us) && (us.StatusCode == http.StatusUnauthorized || us.StatusCode == http.StatusForbidden) {
		denied = true
	}
	return &exec.PullError{Image: image, Denied: denied, Err: err}
}
