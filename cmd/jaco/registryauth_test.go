package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

func writeDockerConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The credentials are those `docker login` filed under the image's
// registry, however the key is written.
func TestRegistryAuthFor(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	cfg := writeDockerConfig(t, `{"auths": {
		"https://index.docker.io/v1/": {"auth": "`+b64("hub:hubpw")+`"},
		"198.18.0.2:5000": {"auth": "`+b64("u:p:with:colons")+`"},
		"https://r.test/v1/": {"username": "ru", "password": "rp"},
		"tok.test": {"username": "ignored", "identitytoken": "idt"}
	}}`)
	for _, c := range []struct {
		image string
		want  *api.RegistryAuth
	}{
		{"busybox", &api.RegistryAuth{Server: "docker.io", Username: "hub", Password: "hubpw"}},
		{"docker.io/library/busybox:1", &api.RegistryAuth{Server: "docker.io", Username: "hub", Password: "hubpw"}},
		{"198.18.0.2:5000/app/web:1", &api.RegistryAuth{Server: "198.18.0.2:5000", Username: "u", Password: "p:with:colons"}},
		{"r.test/web@sha256:" + strings.Repeat("a", 64), &api.RegistryAuth{Server: "r.test", Username: "ru", Password: "rp"}},
		{"tok.test/web", &api.RegistryAuth{Server: "tok.test", Username: "ignored", IdentityToken: "idt"}},
	} {
		got, err := registryAuthFor(c.image, cfg)
		if err != nil || !proto.Equal(got, c.want) {
			t.Errorf("registryAuthFor(%s) = %v, %v; want %v", c.image, got, err, c.want)
		}
	}
}

// Without credentials for the registry the command stops, saying what to
// do, before anything is sent.
func TestRegistryAuthForRefuses(t *testing.T) {
	for _, c := range []struct {
		name, config, image, says string
	}{
		{"other registry only", `{"auths": {"r.test": {"auth": "dTpw"}}}`, "198.18.0.2:5000/web", "no credentials for 198.18.0.2:5000"},
		{"port matters", `{"auths": {"198.18.0.2": {"auth": "dTpw"}}}`, "198.18.0.2:5000/web", "no credentials for 198.18.0.2:5000"},
		{"credential helper", `{"auths": {}, "credsStore": "desktop"}`, "r.test/web", `credential helper "desktop"`},
		{"bad base64", `{"auths": {"r.test": {"auth": "%%%"}}}`, "r.test/web", "not base64"},
		{"no colon", `{"auths": {"r.test": {"auth": "dXNlcg=="}}}`, "r.test/web", "not USER:PASSWORD"},
		{"empty entry", `{"auths": {"r.test": {}}}`, "r.test/web", "no user name and password"},
		{"not json", `{`, "r.test/web", "config.json"},
		{"bad image", `{}`, "UPPER/Case", "image"},
	} {
		_, err := registryAuthFor(c.image, writeDockerConfig(t, c.config))
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: err %v, want one saying %q", c.name, err, c.says)
		}
	}
	_, err := registryAuthFor("r.test/web", filepath.Join(t.TempDir(), "none.json"))
	if err == nil || !strings.Contains(err.Error(), "docker login r.test") {
		t.Errorf("missing file: %v", err)
	}
}

// DOCKER_CONFIG names the directory, as for docker; the flag wins.
func TestDockerConfigPath(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", "/etc/dc")
	if p, _ := dockerConfigPath(""); p != "/etc/dc/config.json" {
		t.Errorf("with DOCKER_CONFIG: %s", p)
	}
	if p, _ := dockerConfigPath("/x/c.json"); p != "/x/c.json" {
		t.Errorf("with the flag: %s", p)
	}
	t.Setenv("DOCKER_CONFIG", "")
	t.Setenv("HOME", "/home/op")
	if p, _ := dockerConfigPath(""); p != "/home/op/.docker/config.json" {
		t.Errorf("default: %s", p)
	}
}

// `service create --with-registry-auth` without credentials for the
// image's registry is a usage mistake, refused before dialling.
func TestCreateWithoutCredentialsIsAUsageMistake(t *testing.T) {
	t.Setenv("JACO_SERVER", "")
	t.Setenv("JACO_TOKEN", "")
	cfg := writeDockerConfig(t, `{"auths": {"r.test": {"auth": "dTpw"}}}`)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--with-registry-auth", "--registry-config", cfg, "198.18.0.2:5000/web"}, 2, "error: usage: --with-registry-auth: " + cfg + " holds no credentials for 198.18.0.2:5000"},
		{[]string{"--registry-config", cfg, "r.test/web"}, 2, "error: usage: --registry-config is read only with --with-registry-auth"},
		{[]string{"--with-registry-auth", "--registry-config", writeDockerConfig(t, "{"), "r.test/web"}, 1, "error: --with-registry-auth: Docker config file"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"--data-dir", t.TempDir(), "--timeout", "1s", "service", "create", "--name", "web"}, c.args...)
		code := run(args, strings.NewReader(""), &stdout, &stderr)
		if code != c.code || !strings.HasPrefix(stderr.String(), c.want) {
			t.Errorf("jaco %v: exit %d, stderr %q; want %d and %q", args, code, stderr.String(), c.code, c.want)
		}
	}
}

// A stack's services get the credentials of their own image's registry;
// a public image pulls without (a warning); no credentials at all is an
// error; without the flag nothing is read.
func TestRegistryAuthStack(t *testing.T) {
	cfg := writeDockerConfig(t, `{"auths": {"198.18.0.2:5000": {"username": "u", "password": "p"}}}`)
	specs := func() []*api.ServiceSpec {
		return []*api.ServiceSpec{
			{Name: "s_web", Image: "198.18.0.2:5000/web:1"},
			{Name: "s_cache", Image: "busybox"},
			{Name: "s_hook"},
		}
	}
	var warn bytes.Buffer
	got := specs()
	f := registryAuthFlags{with: true, config: cfg}
	if err := f.applyStack(&warn, got); err != nil {
		t.Fatal(err)
	}
	if want := (&api.RegistryAuth{Server: "198.18.0.2:5000", Username: "u", Password: "p"}); !proto.Equal(got[0].RegistryAuth, want) {
		t.Errorf("s_web credentials %v, want %v", got[0].RegistryAuth, want)
	}
	if got[1].RegistryAuth != nil || got[2].RegistryAuth != nil {
		t.Errorf("s_cache and s_hook got credentials: %v, %v", got[1].RegistryAuth, got[2].RegistryAuth)
	}
	if !strings.Contains(warn.String(), "warning: service s_cache pulls busybox without credentials") {
		t.Errorf("no warning for s_cache: %q", warn.String())
	}

	public := specs()[1:]
	if err := f.applyStack(&warn, public); err == nil || !strings.Contains(err.Error(), "no credentials for docker.io") {
		t.Errorf("a stack with no credentials for any image: %v", err)
	}

	none := specs()
	if err := (&registryAuthFlags{}).applyStack(&warn, none); err != nil || none[0].RegistryAuth != nil {
		t.Errorf("without --with-registry-auth: %v, %v", none[0].RegistryAuth, err)
	}
	if err := (&registryAuthFlags{config: cfg}).applyStack(&warn, none); err == nil {
		t.Error("--registry-config without --with-registry-auth accepted")
	}
}
