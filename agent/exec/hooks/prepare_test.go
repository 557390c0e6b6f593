package hooks

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
)

func TestControllerRefusesInvalidBundles(t *testing.T) {
	rt := newRuntime(t)
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no launch", map[string]string{"prepare": "#!/bin/sh\n"}, "no launch"},
		{"unknown file", map[string]string{"launch": "#!/bin/sh\n", "start.sh": "x"}, `"start.sh"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := newReplica(t, tc.files, nil)
			_, err := rt.Controller(rep)
			if !errors.Is(err, ErrInvalidBundle) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Controller error = %v, want ErrInvalidBundle mentioning %s", err, tc.want)
			}
		})
	}
}

func TestPrepareWritesExecutableBundle(t *testing.T) {
	rep := newReplica(t, map[string]string{"launch": "#!/bin/sh\nexit 0\n", "cleanup": "#!/bin/sh\n"}, nil)
	c := controllerFor(t, newRuntime(t), rep)
	if err := c.Prepare(testContext(t)); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	for _, name := range []string{"launch", "cleanup"} {
		fi, err := os.Stat(filepath.Join(rep.Dir, "bundle", name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o755 {
			t.Errorf("%s mode = %v, want 0755", name, fi.Mode().Perm())
		}
	}
}

// prepareScript fails its first $FAILS runs, counting runs in $COUNTER.
const prepareScript = `#!/bin/sh
n=$(cat "$COUNTER" 2>/dev/null || echo 0)
n=$((n+1))
echo $n > "$COUNTER"
echo "prepare attempt $n"
[ "$n" -gt "$FAILS" ]
`

func TestPrepareRetries(t *testing.T) {
	for _, tc := range []struct {
		name         string
		fails, limit int
		wantAttempts int
		wantErr      bool
	}{
		{name: "fails every time, limit 4", fails: 1000, limit: 4, wantAttempts: 4, wantErr: true},
		{name: "fails twice, default limit", fails: 2, limit: 0, wantAttempts: 3},
		{name: "fails every time, default limit 10", fails: 1000, limit: 0, wantAttempts: 10, wantErr: true},
		{name: "succeeds first time", fails: 0, limit: 1, wantAttempts: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counter := filepath.Join(t.TempDir(), "count")
			rep := newReplica(t, map[string]string{"prepare": prepareScript, "launch": "#!/bin/sh\n"},
				func(s *api.ServiceSpec) {
					s.Bundle.PrepareStartLimit = uint32(tc.limit)
					s.Env = []string{"COUNTER=" + counter, "FAILS=" + strconv.Itoa(tc.fails)}
				})
			c := controllerFor(t, newRuntime(t), rep)
			err := c.Prepare(testContext(t))
			if tc.wantErr != (err != nil) || (err != nil && !errors.Is(err, ErrPrepareFailed)) {
				t.Fatalf("Prepare error = %v, want failure: %v", err, tc.wantErr)
			}
			data, _ := os.ReadFile(counter)
			if got, _ := strconv.Atoi(strings.TrimSpace(string(data))); got != tc.wantAttempts {
				t.Fatalf("prepare ran %d times, want %d", got, tc.wantAttempts)
			}
			if !strings.Contains(readLog(t, rep), "prepare attempt "+strconv.Itoa(tc.wantAttempts)) {
				t.Errorf("prepare output missing from the log:\n%s", readLog(t, rep))
			}
			if err == nil {
				// Once prepared, Prepare does not run prepare again.
				if err := c.Prepare(testContext(t)); err != nil {
					t.Fatalf("second Prepare: %v", err)
				}
				data, _ := os.ReadFile(counter)
				if got, _ := strconv.Atoi(strings.TrimSpace(string(data))); got != tc.wantAttempts {
					t.Fatalf("second Prepare ran prepare again (%d runs)", got)
				}
			}
		})
	}
}
