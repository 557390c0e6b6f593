package containerd

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/containerd/containerd/v2/core/remotes/docker"
	remoteerrors "github.com/containerd/containerd/v2/core/remotes/errors"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
)

// A service's credentials go to its registry and nowhere else; an
// identity token goes as the refresh token (no user name).
func TestCredentials(t *testing.T) {
	pass := &api.RegistryAuth{Server: "198.18.0.2:5000", Username: "u", Password: "p"}
	hub := &api.RegistryAuth{Server: "docker.io", Username: "u", Password: "p"}
	tok := &api.RegistryAuth{Server: "r.test", Username: "u", IdentityToken: "t"}
	for _, c := range []struct {
		auth           *api.RegistryAuth
		host           string
		user, password string
	}{
		{pass, "198.18.0.2:5000", "u", "p"},
		{pass, "198.18.0.2", "", ""},
		{pass, "auth.example", "", ""},
		{hub, "registry-1.docker.io", "u", "p"},
		{hub, "index.docker.io", "u", "p"},
		{hub, "ghcr.io", "", ""},
		{tok, "r.test", "", "t"},
		{nil, "r.test", "", ""},
		{&api.RegistryAuth{}, "", "", ""},
	} {
		user, password, err := credentials(c.auth)(c.host)
		if err != nil || user != c.user || password != c.password {
			t.Errorf("credentials(%v)(%s) = %q, %q, %v; want %q, %q", c.auth, c.host, user, password, err, c.user, c.password)
		}
	}
}

// A pull the registry refused is told apart from any other failure by
// the errors containerd's resolver returns, not by their text.
func TestPullErrorDenied(t *testing.T) {
	status := func(code int) error {
		return fmt.Errorf("failed to resolve reference: %w", remoteerrors.ErrUnexpectedStatus{StatusCode: code, Status: http.StatusText(code)})
	}
	for _, c := range []struct {
		err    error
		denied bool
	}{
		{status(http.StatusUnauthorized), true},
		{status(http.StatusForbidden), true},
		{fmt.Errorf("pull access denied: %w", docker.ErrInvalidAuthorization), true},
		{status(http.StatusInternalServerError), false},
		{errors.New("dial tcp 198.18.0.2:5000: connect: connection refused"), false},
	} {
		err := pullError("r.test/a:1", c.err)
		var pe *exec.PullError
		if !errors.As(err, &pe) || pe.Denied != c.denied || !errors.Is(err, c.err) {
			t.Errorf("pullError(%v) = %#v, want a PullError wrapping it, denied %v", c.err, err, c.denied)
		}
	}
}
