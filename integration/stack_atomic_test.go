package integration

// jaco stack deploy is all or nothing (docs/adr/0062-atomic-stack-deploy.md):
// a stack the manager refuses part of, after the CLI's own checks passed,
// leaves the cluster's networks, secrets, configs and services as they were.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// atomicStack's third service (by dependency order: db, api, web)
// publishes the port the service "other", outside the stack, publishes:
// only the manager knows that.
const atomicStack = `services:
  db:
    image: ` + containerImage + `
    networks: [back]
    deploy: {replicas: 0}
  api:
    image: ` + containerImage + `
    networks: [back]
    depends_on: [db]
    secrets: [token]
    configs: [site]
    deploy: {replicas: 0}
  web:
    image: ` + containerImage + `
    networks: [back, front]
    depends_on: [api]
    ports: ["8080:80"]
    deploy: {replicas: 0}
networks:
  back:
  front:
secrets:
  token:
    file: ./token.txt
configs:
  site:
    file: ./site.conf
`

func TestStackDeployRefusedByServerChangesNothing(t *testing.T) {
	m := startDaemon(t, "m")
	m.initQuiet()
	dir := t.TempDir()
	for name, text := range map[string]string{"compose.yaml": atomicStack, "token.txt": "t0ken\n", "site.conf": "listen 80\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "compose.yaml")
	wantOK(t, m.jaco("service", "create", "-d", "-q", "--name", "other", "--replicas", "0", "-p", "8080:80", containerImage))
	state := func() string {
		t.Helper()
		var out []string
		for _, args := range [][]string{
			{"network", "ls", "--format", "json"},
			{"secret", "ls", "--format", "json"},
			{"config", "ls", "--format", "json"},
			{"service", "ls", "--format", "json"},
		} {
			out = append(out, wantOK(t, m.jaco(args...)).stdout)
		}
		return strings.Join(out, "\n")
	}
	before := state()

	r := m.jaco("stack", "deploy", "-d", "-c", file, "shop")
	wantError(t, r, 1, "invalid_spec")
	if !strings.Contains(r.stderr, "8080") {
		t.Errorf("the refusal %q does not name the port", r.stderr)
	}
	// The manager answered after its write was refused: what the store
	// holds now is final, no waiting needed.
	if after := state(); after != before {
		t.Fatalf("a refused deploy changed the cluster:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// Without the clash the same stack deploys whole, in one call.
	wantOK(t, m.jaco("service", "rm", "other"))
	ok := wantOK(t, m.jaco("stack", "deploy", "-d", "-c", file, "shop"))
	for _, line := range []string{"Creating network shop_back", "Creating network shop_front", "Creating secret shop_token",
		"Creating config shop_site", "Creating service shop_db", "Creating service shop_api", "Creating service shop_web"} {
		if !strings.Contains(ok.stdout, line+"\n") {
			t.Errorf("deploy printed %q, want %q", ok.stdout, line)
		}
	}
	for _, name := range []string{"shop_db", "shop_api", "shop_web"} {
		wantOK(t, m.jaco("service", "inspect", name))
	}
}
