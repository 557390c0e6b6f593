package integration

// Private registries (docs/design.md §9, "Registry credentials"): Debian's
// docker-registry, with htpasswd auth and a certificate from a test CA, on
// a host of the test's hub; jacod trusts that CA through Go's system trust
// store (SSL_CERT_FILE), as an operator's node trusts a registry's CA.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ctrdclient "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"golang.org/x/crypto/bcrypt"

	"github.com/jaco-project/jaco/internal/ociimage"
	"github.com/jaco-project/jaco/internal/testcluster"
	"github.com/jaco-project/jaco/internal/testenv"
)

const (
	registryUser     = "puller"
	registryPassword = "registry-test-password"
	registryPort     = 5000
)

// A service sent with --with-registry-auth pulls its image from a registry
// that wants credentials and runs; one without them fails its replicas
// image_pull_denied, runs once `service update --with-registry-auth`
// gives them, and no client reads them back. An unreachable registry
// fails image_pull_failed.
//
// Not parallel: jacod learns the test CA from SSL_CERT_FILE in the
// environment every daemon of the test is started with.
func TestPrivateRegistry(t *testing.T) {
	requireNetns(t)
	if _, err := exec.LookPath("docker-registry"); err != nil {
		testenv.SkipOrFail(t, "the private registry test needs Debian's docker-registry (apt-get install docker-registry): %v", err)
	}
	ca := newTestCA(t)
	t.Setenv("SSL_CERT_FILE", ca.file)
	c := newContainerCluster(t, 1)
	reg := startRegistry(t, c.hub.addHost(t), ca)
	// Two tags: a node that has an image runs it without asking the
	// registry (as Docker does), so the service without credentials
	// names one the node has not pulled.
	image, other, stacked := reg.push(t, c.client, "1"), reg.push(t, c.client, "2"), reg.push(t, c.client, "3")

	dockerConfig := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(registryUser + ":" + registryPassword))
	writeFile(t, filepath.Join(dockerConfig, "config.json"), fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, reg.server, auth))
	withAuth := func(args ...string) result {
		return jaco([]string{"DOCKER_CONFIG=" + dockerConfig}, append([]string{"--data-dir", c.manager.dir}, args...)...)
	}
	create := func(name, image string, flags ...string) []string {
		args := append([]string{"service", "create", "-d", "--name", name}, quickStop...)
		return append(append(append(args, flags...), image, "--"), idleCmd...)
	}

	wantOK(t, withAuth(create("private", image, "--with-registry-auth")...))
	c.waitRunning(t, "private", 1, nil)

	wantOK(t, c.manager.jaco(create("anonymous", other)...))
	c.waitReason(t, "anonymous", "image_pull_denied")
	wantOK(t, withAuth("service", "update", "-d", "--with-registry-auth", "anonymous"))
	c.waitRunning(t, "anonymous", 1, nil)

	// A stack deployed with --with-registry-auth pulls its private image
	// with the credentials.
	composeFile := filepath.Join(t.TempDir(), "compose.yaml")
	writeFile(t, composeFile, fmt.Sprintf(`services:
  app:
    image: %s
    command: [%q, %q, %q]
    stop_grace_period: 1s
    deploy:
      restart_policy: {delay: 1s}
`, stacked, idleCmd[0], idleCmd[1], strings.ReplaceAll(idleCmd[2], "$", "$$")))
	wantOK(t, withAuth("stack", "deploy", "-d", "--with-registry-auth", "-c", composeFile, "reg"))
	c.waitRunning(t, "reg_app", 1, nil)

	for _, args := range [][]string{
		{"service", "inspect", "private"}, {"service", "inspect", "anonymous"}, {"service", "inspect", "reg_app"},
		{"stack", "ps", "reg", "--format", "json"},
		{"service", "ls", "--format", "json"}, {"service", "ps", "private", "--all", "--format", "json"},
	} {
		if out := wantOK(t, c.manager.jaco(args...)).stdout; strings.Contains(out, registryPassword) || strings.Contains(out, auth) {
			t.Errorf("jaco %s shows the registry password:\n%s", strings.Join(args, " "), out)
		}
	}

	// Nothing listens there: every host of the hub is 198.18.0.1-126.
	wantOK(t, c.manager.jaco(create("unreachable", "198.18.0.126:5000/jaco/web:1")...))
	c.waitReason(t, "unreachable", "image_pull_failed")
}

// waitReason waits until a replica of svc has failed with reason word.
func (c *ccluster) waitReason(t testing.TB, svc, word string) {
	t.Helper()
	eventually(t, replicaTimeout, func() error {
		reps, err := decode[[]struct {
			State  string `json:"state"`
			Reason string `json:"reason"`
			Error  string `json:"error"`
		}](c.manager.jaco("service", "ps", svc, "--all", "--format", "json"))
		if err != nil {
			return err
		}
		for _, r := range reps {
			if r.Reason == word {
				return nil
			}
		}
		return fmt.Errorf("%s: no replica failed %s: %+v", svc, word, reps)
	})
}

// testCA is a CA whose certificate is the whole trust store of the test's
// daemons.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // its certificate, PEM
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "jaco registry test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &testCA{cert: cert, key: key, file: filepath.Join(t.TempDir(), "ca.pem")}
	writeFile(t, ca.file, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	return ca
}

// issue writes a server certificate for ip and its key into dir.
func (ca *testCA) issue(t testing.TB, ip, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: ip},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP(ip)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeFile(t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))
	return certFile, keyFile
}

// registry is a docker-registry serving HTTPS with htpasswd auth on a
// host of the hub.
type registry struct {
	host   *host
	server string // host:port, as image references name it
	ca     *testCA
}

// startRegistry starts docker-registry on hs; it is stopped when t ends.
func startRegistry(t testing.TB, hs *host, ca *testCA) *registry {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile := ca.issue(t, hs.ip, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte(registryPassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	htpasswd := filepath.Join(dir, "htpasswd")
	writeFile(t, htpasswd, registryUser+":"+string(hash)+"\n")
	r := &registry{host: hs, server: fmt.Sprintf("%s:%d", hs.ip, registryPort), ca: ca}
	config := filepath.Join(dir, "config.yml")
	writeFile(t, config, fmt.Sprintf(`version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: %s
http:
  addr: %s
  tls:
    certificate: %s
    key: %s
auth:
  htpasswd:
    realm: jacotest
    path: %s
`, filepath.Join(dir, "storage"), r.server, certFile, keyFile, htpasswd))

	p := testcluster.NewProcess(testcluster.Spec{
		Name: "docker-registry", Path: "docker-registry", Args: []string{"serve", config},
		Host: hs.h, Log: filepath.Join(dir, "registry.log"), Harness: "integration",
	})
	if _, err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.Kill()
		if t.Failed() {
			log, err := p.Log()
			t.Logf("docker-registry's log (%v):\n%s", err, log)
		}
	})
	// Up once /v2/ asks for credentials.
	client := r.httpClient()
	eventually(t, startTimeout, func() error {
		resp, err := client.Get("https://" + r.server + "/v2/")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			return fmt.Errorf("GET /v2/ answered %s, want 401", resp.Status)
		}
		return nil
	})
	return r
}

// httpClient reaches the registry from inside its host's namespace,
// trusting the test CA only.
func (r *registry) httpClient() *http.Client {
	roots := x509.NewCertPool()
	roots.AddCert(r.ca.cert)
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext:     dialInto(r.host.ns),
		TLSClientConfig: &tls.Config{RootCAs: roots},
	}}
}

// push builds an image of its own (another page than the test image's,
// so its layer is one no node has), pushes it as jaco/web:tag with the
// registry's credentials and returns its reference.
func (r *registry) push(t testing.TB, cl *ctrdclient.Client, tag string) string {
	t.Helper()
	ref := r.server + "/jaco/web:" + tag
	var archive bytes.Buffer
	if err := ociimage.Build(&archive, ref, ociimage.WithFile("/www/index.html", []byte("from a private registry\n"), 0o644)); err != nil {
		t.Fatalf("build image (needs busybox-static): %v", err)
	}
	ctx, cancel := context.WithTimeout(namespaces.WithNamespace(context.Background(), "jacotest-registry-push"), 2*time.Minute)
	defer cancel()
	imgs, err := cl.Import(ctx, &archive)
	if err != nil || len(imgs) != 1 {
		t.Fatalf("import %s: %v (%d images)", ref, err, len(imgs))
	}
	client := r.httpClient()
	authorizer := docker.NewDockerAuthorizer(docker.WithAuthClient(client),
		docker.WithAuthCreds(func(string) (string, string, error) { return registryUser, registryPassword, nil }))
	resolver := docker.NewResolver(docker.ResolverOptions{
		Hosts: docker.ConfigureDefaultRegistries(docker.WithClient(client), docker.WithAuthorizer(authorizer)),
	})
	if err := cl.Push(ctx, ref, imgs[0].Target, ctrdclient.WithResolver(resolver)); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	return ref
}

// dialInto dials from inside network namespace ns (see inNetns).
func dialInto(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (conn net.Conn, err error) {
		err = inNetns("/var/run/netns/"+ns, func() (err error) {
			var d net.Dialer
			conn, err = d.DialContext(ctx, network, addr)
			return err
		})
		return conn, err
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
