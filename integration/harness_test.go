package integration

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/internal/waitfor"
)

// Paths of the binaries under test, built once by TestMain.
var jacodBin, jacoBin string

// raceReport is what the race detector prints; a process built with -race
// that prints it has a data race even if the test's assertions passed.
const raceReport = "WARNING: DATA RACE"

func TestMain(m *testing.M) {
	flag.Parse()
	setParallel()
	os.Exit(buildAndRun(m))
}

// defaultParallel is how many tests run at once unless -parallel says
// otherwise. Go's default, GOMAXPROCS, suits tests that compute; these
// mostly wait on the processes they start (elections, heartbeats,
// containers, timeouts): with six at once on two cores, the package used
// under half the machine's CPU time. Every test has its own namespaces,
// data dirs and ports (docs/design.md §14), so more of them fit side by
// side.
const defaultParallel = 8

// setParallel raises -parallel to defaultParallel when it was not given.
func setParallel() {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if given {
		return
	}
	if err := flag.Set("test.parallel", strconv.Itoa(max(defaultParallel, runtime.GOMAXPROCS(0)))); err != nil {
		fmt.Fprintln(os.Stderr, "integration: -parallel:", err)
	}
}

// buildAndRun builds jacod and jaco from this module into a temporary
// directory, so every test runs the code of the tree it is in, not whatever
// jaco is installed on the machine.
func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "jaco-integration-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	if os.Getenv("JACO_TEST_RACE") == "1" {
		args = append(args, "-race")
	}
	args = append(args, "github.com/jaco-project/jaco/cmd/jacod", "github.com/jaco-project/jaco/cmd/jaco")
	start := time.Now()
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "integration: go %s: %v\n%s", strings.Join(args, " "), err, out)
		return 1
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "integration: built jacod and jaco in %v\n", time.Since(start).Round(time.Millisecond))
	}
	jacodBin, jacoBin = filepath.Join(dir, "jacod"), filepath.Join(dir, "jaco")
	return m.Run()
}

// result is how a finished process answered.
type result struct {
	args           []string
	stdout, stderr string
	code           int // exit code; -1 when the process could not run or was killed
}

// err describes a result that is not a success, for eventually's messages.
func (r result) err() error {
	if r.code == 0 {
		return nil
	}
	return fmt.Errorf("%s: exit %d: %s", strings.Join(r.args, " "), r.code, strings.TrimSpace(r.stderr))
}

// cmdTimeout bounds every one-shot process, so a hung CLI fails its test
// instead of the whole run's -timeout.
const cmdTimeout = 60 * time.Second

// run runs bin to completion with the test environment plus env.
func run(bin string, env []string, args ...string) result {
	return runWithStdin(bin, env, nil, args...)
}

// runWithStdin is run with stdin (nil: none).
func runWithStdin(bin string, env []string, stdin io.Reader, args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(testEnv(), env...)
	cmd.Stdin = stdin
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{args: append([]string{filepath.Base(bin)}, args...), stdout: stdout.String(), stderr: stderr.String()}
	switch {
	case err == nil:
	case cmd.ProcessState != nil && cmd.ProcessState.Exited():
		r.code = cmd.ProcessState.ExitCode()
	default:
		r.code = -1
		r.stderr += fmt.Sprintf("\n(integration: %v)", err)
	}
	return r
}

// jaco runs the CLI; env adds variables such as JACO_TOKEN.
func jaco(env []string, args ...string) result { return run(jacoBin, env, args...) }

// testEnv is this process's environment without JACO_* variables: a
// JACO_TOKEN or JACO_DATA_DIR in the shell that runs the tests must not
// change what the binaries under test do.
//
// Binaries built with -race sleep a second on exit by default; unless the
// caller chose GORACE, that sleep is cut, or every CLI call would pay it.
func testEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "JACO_") {
			env = append(env, kv)
		}
	}
	if _, set := os.LookupEnv("GORACE"); !set {
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	return env
}

// checkNoRace fails t when a process's output holds a race report.
func checkNoRace(t testing.TB, what, output string) {
	t.Helper()
	if strings.Contains(output, raceReport) {
		t.Errorf("%s reported a data race:\n%s", what, output)
	}
}

// eventually waits on cond (waitfor.Eventually).
var eventually = waitfor.Eventually
