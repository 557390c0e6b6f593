// Package importrules holds only a test: it checks the import rules the
// layering depends on against what `go list` says the module's packages
// import, so that a change breaking them fails `make test` instead of
// waiting for a reviewer to notice.
//
//   - The leader subsystems never reach each other: each one is started
//     and stopped on its own by the manager, and what two of them share
//     lives in a leaf package below both (manager/apierror,
//     manager/voterset, manager/jointoken, api) or is handed in by the
//     manager, which composes them. The shared leaves reach no
//     subsystem.
//   - The store does not reach raft: the store proposes through its
//     Proposer interface and raft applies through its Applier, so the store
//     is tested without a raft group and raft without the store's tables.
//   - The agent does not reach the manager: a worker runs the agent alone
//     and must not link, or depend on the internals of, the manager.
//   - The agent does not reach the daemon: the daemon (node) composes the
//     agent's parts, the network plane (agent/netplane) among them, and
//     hands each what it needs, so none depends on how the daemon is
//     built.
//   - The daemon's keyring (node/keyring) reaches nothing under manager/
//     but the sealing it uses: it asks the daemon and the manager through
//     two interfaces of its own, so it is tested with fakes and does not
//     link raft or the store.
//   - The daemon reaches raft and the store only through package manager:
//     no package under node/ imports anything under manager/state/
//     directly, so the raft member and the store stay the manager's to
//     change.
//   - The daemon's formation (node/formation) does not reach the agent: it
//     asks the daemon to start it.
//   - The daemon's role and certificate check (node/roles) reaches neither
//     the manager nor the agent: it runs on every node, decides when and
//     in what order the role changes, and asks the daemon, through its
//     Daemon and Files interfaces, to write raft state and start or stop
//     the manager, so it is tested without a raft group.
//   - The CLI does not link the daemon: it once imported node for two path
//     helpers and so linked 678 packages (containerd client, agent, the
//     whole manager). It may link the backup file format and its sealing,
//     which `jaco backup` writes, and a bounded number of packages outside
//     the standard library (TestCLIStaysSmall).
//   - The shipped binaries do not link the test harness: internal/testcluster
//     starts, pauses and partitions daemons (docs/design.md §14), which
//     nothing jacod or jaco does needs. The harness itself does not import
//     testing, since the nemesis runner and the benchmark are programs
//     (TestHarnessIsNoTest).
package importrules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// leaderSubsystems are the packages the leader starts and stops
// (manager/subsystems.go) and the services it serves; none may import
// another, directly or through any other package.
var leaderSubsystems = []string{
	"manager/dispatcher",
	"manager/scheduler",
	"manager/orchestrator",
	"manager/rolemanager",
	"manager/membership",
	"manager/backup",
	"manager/controlapi",
	"manager/netalloc",
	"manager/volumemove",
}

// sharedLeaves are what several leader subsystems share; they reach none.
// manager/jointoken is one although the leader also runs its sweeper:
// membership redeems the tokens controlapi issues, and apierror maps its
// errors.
var sharedLeaves = []string{"manager/apierror", "manager/voterset", "manager/jointoken"}

// rule forbids every package matched by from to reach, through any chain
// of imports, a package matched by to and by none of except; a direct rule
// forbids only importing one, so that it may still be reached through
// another package. A pattern is a path relative to the module, or such a
// path followed by "/..." for it and everything below it.
type rule struct {
	from, to string
	except   []string
	direct   bool
}

// cliBackupDeps are the manager packages the CLI links on purpose: `jaco
// backup` seals the file it writes. Both are small and bring no heavy
// dependency; `jaco restore` runs jacod, which links raft storage instead.
var cliBackupDeps = []string{"manager/backup/backupfile", "manager/encryption"}

// keyringDeps are the manager packages node/keyring links: the data keys,
// the unlock key and the sealing of key files.
var keyringDeps = []string{"manager/encryption"}

func rules() []rule {
	r := []rule{
		{from: "manager/state/store/...", to: "manager/state/raft/..."},
		{from: "agent/...", to: "manager/..."},
		{from: "agent/...", to: "node/..."},
		{from: "node/roles/...", to: "manager/..."},
		{from: "node/roles/...", to: "agent/..."},
		{from: "cmd/jaco", to: "node/..."},
		{from: "cmd/jaco", to: "agent/..."},
		{from: "cmd/jaco", to: "manager/...", except: cliBackupDeps},
		{from: "node/keyring", to: "manager/...", except: keyringDeps},
		{from: "node/...", to: "manager/state/...", direct: true},
		{from: "node/formation", to: "agent/..."},
		{from: "cmd/jaco", to: "internal/testcluster"},
		{from: "cmd/jacod", to: "internal/testcluster"},
	}
	for _, from := range leaderSubsystems {
		for _, to := range leaderSubsystems {
			if from != to {
				r = append(r, rule{from: from, to: to})
			}
		}
	}
	for _, from := range sharedLeaves {
		for _, to := range leaderSubsystems {
			r = append(r, rule{from: from, to: to})
		}
	}
	return r
}

func TestImportRules(t *testing.T) {
	g := loadGraph(t)
	named := []string{"manager/state/store", "manager/state/raft", "agent", "cmd/jaco", "cmd/jacod", "node", "node/keyring", "node/roles", "node/formation", harness}
	for _, pkg := range slices.Concat(named, leaderSubsystems, sharedLeaves, cliBackupDeps, keyringDeps) {
		if _, ok := g.imports[g.module+"/"+pkg]; !ok {
			t.Errorf("package %s is not in the module: a rule naming it would pass without checking anything; update the rules", pkg)
		}
	}
	for _, r := range rules() {
		for _, v := range g.violations(r) {
			t.Error(v)
		}
	}
}

// violations are the ways the module's packages break r, one sentence
// each.
func (g *graph) violations(r rule) []string {
	var out []string
	for _, from := range g.matching(r.from) {
		forbidden := func(p string) bool {
			return g.matches(r.to, p) && !slices.ContainsFunc(r.except, func(e string) bool { return g.matches(e, p) })
		}
		if r.direct {
			for _, p := range g.imports[from] {
				if forbidden(p) {
					out = append(out, fmt.Sprintf("%s must not import %s; it imports %s", g.short(from), r.to, g.short(p)))
				}
			}
			continue
		}
		if chain := g.path(from, forbidden); chain != nil {
			out = append(out, fmt.Sprintf("%s must not reach %s; it does through %s", g.short(from), r.to, strings.Join(chain, " -> ")))
		}
	}
	return out
}

// harness is the package that runs daemons for the integration tests,
// the nemesis runner and the benchmark.
const harness = "internal/testcluster"

// TestHarnessIsNoTest: the harness and what it imports from the module
// stay free of package testing, so the programs that use it get no test
// flags and no test-only code paths.
func TestHarnessIsNoTest(t *testing.T) {
	g := loadGraph(t)
	from := g.module + "/" + harness
	if chain := g.path(from, func(p string) bool { return p == "testing" }); chain != nil {
		t.Errorf("%s must not import testing; it does through %s", harness, strings.Join(chain, " -> "))
	}
}

// maxCLIDeps bounds the packages outside the standard library the CLI
// links (about 135 today: gRPC, protobuf, cobra and the api). The standard
// library's share is the toolchain's: gRPC alone brings some 200 of it.
const maxCLIDeps = 200

// TestCLIStaysSmall: a new heavy dependency of the CLI fails here.
func TestCLIStaysSmall(t *testing.T) {
	goCmd, root := goTool(t)
	// One listing, each package marked by whether it is in the standard library.
	all := strings.Fields(goOutput(t, goCmd, root, "list", "-deps", "-f", "{{.Standard}}", "./cmd/jaco"))
	nonStd := slices.DeleteFunc(slices.Clone(all), func(std string) bool { return std == "true" })
	t.Logf("jaco links %d packages, %d outside the standard library", len(all), len(nonStd))
	if len(nonStd) > maxCLIDeps {
		t.Errorf("jaco links %d packages outside the standard library, more than %d: what new dependency brought them?", len(nonStd), maxCLIDeps)
	}
}

// graph is the module's packages and the packages each imports directly
// (test files excluded: the rules are about what a binary links).
type graph struct {
	module  string
	imports map[string][]string
}

// goTool finds the go command and the module's root directory.
func goTool(t *testing.T) (goCmd, root string) {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the imports: %v", err)
	}
	modFile := goOutput(t, goCmd, "", "env", "GOMOD")
	if modFile == "" || modFile == os.DevNull {
		t.Fatalf("go env GOMOD = %q: not inside the module", modFile)
	}
	return goCmd, filepath.Dir(modFile)
}

func loadGraph(t *testing.T) *graph {
	t.Helper()
	goCmd, root := goTool(t)
	g := &graph{module: goOutput(t, goCmd, root, "list", "-m"), imports: map[string][]string{}}
	out := goOutput(t, goCmd, root, "list", "-json=ImportPath,Dir,Imports", "./...")
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var p struct {
			ImportPath, Dir string
			Imports         []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		g.imports[p.ImportPath] = p.Imports
		// go test caches a passing result keyed on what the test itself
		// read; listing each package's directory makes an edited or
		// added file there rerun the test instead of replaying a pass.
		if _, err := os.ReadDir(p.Dir); err != nil {
			t.Fatalf("read %s: %v", p.Dir, err)
		}
	}
	return g
}

// goOutput runs the go command in dir and returns its trimmed output.
func goOutput(t *testing.T, goCmd, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(goCmd, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// matches says whether the package path p (full import path) matches
// pattern (relative to the module).
func (g *graph) matches(pattern, p string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		full := g.module + "/" + base
		return p == full || strings.HasPrefix(p, full+"/")
	}
	return p == g.module+"/"+pattern
}

// matching are the module's packages that match pattern, sorted.
func (g *graph) matching(pattern string) []string {
	var ps []string
	for p := range g.imports {
		if g.matches(pattern, p) {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return ps
}

// path returns the shortest chain of imports from `from` to a package
// for which bad holds, as module-relative paths, or nil when there is
// none. Only the module's packages are followed: nothing outside it
// imports it back. A package outside it may still be the one bad names
// (the standard library's testing).
func (g *graph) path(from string, bad func(string) bool) []string {
	parent := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, next := range g.imports[p] {
			if _, seen := parent[next]; seen {
				continue
			}
			parent[next] = p
			_, inModule := g.imports[next]
			if bad(next) {
				var chain []string
				for q := next; q != ""; q = parent[q] {
					chain = append(chain, g.short(q))
				}
				slices.Reverse(chain)
				return chain
			}
			if inModule {
				queue = append(queue, next)
			}
		}
	}
	return nil
}

// short is p relative to the module, as the rules name packages.
func (g *graph) short(p string) string {
	return strings.TrimPrefix(p, g.module+"/")
}

// TestPathNamesTheChain checks the walk itself on a small graph: a rule
// that never found anything would pass every time.
func TestPathNamesTheChain(t *testing.T) {
	g := &graph{module: "m", imports: map[string][]string{
		"m/a":         {"fmt", "m/b", "m/c"},
		"m/b":         {"m/d"},
		"m/c":         {"m/b"},
		"m/d":         {"m/manager/x"},
		"m/manager/x": nil,
		"m/e":         {"m/a"},
	}}
	got := fmt.Sprint(g.path("m/a", func(p string) bool { return g.matches("manager/...", p) }))
	if want := "[a b d manager/x]"; got != want {
		t.Errorf("path a -> manager/... = %s, want %s", got, want)
	}
	if chain := g.path("m/d", func(p string) bool { return g.matches("a", p) }); chain != nil {
		t.Errorf("path d -> a = %v, want none (imports are one-way)", chain)
	}
	if got := g.matching("manager/..."); !slices.Equal(got, []string{"m/manager/x"}) {
		t.Errorf("matching manager/... = %v", got)
	}
	// A direct rule sees what a package imports, not what it reaches.
	if got := g.violations(rule{from: "d", to: "manager/...", direct: true}); len(got) != 1 {
		t.Errorf("direct rule d -> manager/...: %q, want one violation", got)
	}
	if got := g.violations(rule{from: "a", to: "manager/...", direct: true}); len(got) != 0 {
		t.Errorf("direct rule a -> manager/...: %q, want none (a reaches it through b)", got)
	}
}
