package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The CLI talks to a daemon; it must not link one. It once imported node
// for two path helpers and so linked 678 packages (containerd client,
// agent, the whole manager); this test keeps that from coming back.

// daemonTrees are the module's directories that make up the daemon.
var daemonTrees = []string{"node", "manager", "agent"}

// backupDeps are the daemon packages the CLI links on purpose: `jaco
// backup` seals the file it writes (backupfile, and the sealing it uses
// from encryption). Both are small and bring no heavy dependency;
// `jaco restore` runs jacod, which links the raft storage instead.
var backupDeps = []string{
	"manager/backup/backupfile",
	"manager/encryption",
}

// maxDeps bounds the packages outside the standard library the CLI links:
// the standard library's share is the toolchain's, and gRPC alone brings
// 200 of it. About 135 today (gRPC, protobuf, cobra and the api); a new
// heavy dependency of the CLI fails here.
const maxDeps = 200

type listedPackage struct {
	ImportPath string
	Standard   bool
	Imports    []string
}

func TestCLIDoesNotLinkTheDaemon(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the CLI's dependencies: %v", err)
	}
	module := goOutput(t, goCmd, "list", "-m")
	pkgs := listDeps(t, goCmd)
	self := pkgs[len(pkgs)-1].ImportPath // go list -deps prints the package last
	if !strings.HasPrefix(self, module+"/") {
		t.Fatalf("go list -deps ended with %s, not a package of %s", self, module)
	}

	imports := make(map[string][]string, len(pkgs))
	nonStd := 0
	for _, p := range pkgs {
		imports[p.ImportPath] = p.Imports
		if !p.Standard {
			nonStd++
		}
	}
	for _, p := range pkgs {
		rel, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok || slices.Contains(backupDeps, rel) {
			continue
		}
		tree, _, _ := strings.Cut(rel, "/")
		if slices.Contains(daemonTrees, tree) {
			path := chain(imports, self, p.ImportPath)
			for i := range path {
				path[i] = strings.TrimPrefix(path[i], module+"/")
			}
			t.Errorf("jaco links the daemon package %s, through %s", rel, strings.Join(path, " -> "))
		}
	}
	t.Logf("jaco links %d packages, %d outside the standard library", len(pkgs), nonStd)
	if nonStd > maxDeps {
		t.Errorf("jaco links %d packages outside the standard library, more than %d: what new dependency brought them?", nonStd, maxDeps)
	}
}

// listDeps is `go list -deps` of this package, dependencies first.
func listDeps(t *testing.T, goCmd string) []listedPackage {
	t.Helper()
	out := goOutput(t, goCmd, "list", "-deps", "-json=ImportPath,Standard,Imports", ".")
	var pkgs []listedPackage
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	return pkgs
}

// chain is a shortest import chain from one package to another.
func chain(imports map[string][]string, from, to string) []string {
	parent := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var path []string
			for ; p != ""; p = parent[p] {
				path = append(path, p)
			}
			slices.Reverse(path)
			return path
		}
		for _, q := range imports[p] {
			if _, seen := parent[q]; !seen {
				parent[q] = p
				queue = append(queue, q)
			}
		}
	}
	return []string{from, "?", to}
}

// goOutput runs the go command in this package's directory.
func goOutput(t *testing.T, goCmd string, args ...string) string {
	t.Helper()
	cmd := exec.Command(goCmd, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
