package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jaco-project/jaco/internal/durable"
)

// Files the runtime and the shim keep in Replica.Dir.
const (
	bundleDir    = "bundle"
	launchFile   = "hooks-launch.json"     // what the shim runs (runtime → shim)
	shimFile     = "hooks-shim.json"       // the shim's process (shim)
	childFile    = "hooks-launch-pid.json" // launch's process (shim)
	exitFile     = "hooks-exit.json"       // how launch ended (shim, last)
	preparedFile = "hooks-prepared"        // prepare succeeded (runtime)
)

// stateFiles are removed by Remove, after the bundle.
var stateFiles = []string{launchFile, shimFile, childFile, exitFile, preparedFile, notifySocketFile, notifyReadyFile, mountsFile}

// launchSpec is everything the shim needs to run launch and finish; the
// runtime writes it before starting the shim, so the shim's command line
// is only the replica's directory.
type launchSpec struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	// Dir is where launch and finish start: the spec's workdir, else
	// the bundle.
	Dir string `json:"dir"`
	// Bundle is the bundle's directory, where finish is (Dir in a spec
	// written before workdir).
	Bundle string `json:"bundle,omitempty"`
	// Proc is the user and limits of launch and finish.
	Proc proc `json:"proc,omitzero"`
	// StopSignal is what the shim sends launch's group when asked to
	// stop with SIGINT (0: SIGINT itself, as a spec written before
	// stop_signal has it). It lives here so that every controller, a
	// later jacod's included, and the shim agree on it (see stop.go).
	StopSignal syscall.Signal `json:"stop_signal,omitempty"`
	// Sandbox is where the shim runs launch and finish: the host
	// without networks and mounts.
	Sandbox sandbox `json:"sandbox,omitzero"`
}

// procRecord names one process; StartTime (field 22 of /proc/PID/stat,
// clock ticks since boot) tells it apart from a later process that reused
// the pid.
type procRecord struct {
	Pid       int    `json:"pid"`
	StartTime uint64 `json:"start_time"`
}

// exitRecord is how launch ended, written by the shim once finish (when
// due) is done.
type exitRecord struct {
	Code        int       `json:"code"`
	Signal      string    `json:"signal,omitempty"`
	At          time.Time `json:"at"`
	StopAsked   bool      `json:"stop_asked"`
	FinishRan   bool      `json:"finish_ran"`
	FinishError string    `json:"finish_error,omitempty"`
}

func writeJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return durable.WriteFile(path, data, 0o600)
}

// readJSON reads path into v; a missing file is reported as fs.ErrNotExist.
func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}

// readRecord reads the record in path, or ok=false when there is none.
func readRecord[T any](path string) (rec T, ok bool, err error) {
	err = readJSON(path, &rec)
	if errors.Is(err, fs.ErrNotExist) {
		return rec, false, nil
	}
	return rec, err == nil, err
}

// readProc returns the process record in path, or ok=false when there is none.
func readProc(path string) (procRecord, bool, error) { return readRecord[procRecord](path) }

// readExit returns the exit record in dir, or ok=false when there is none.
func readExit(dir string) (exitRecord, bool, error) {
	return readRecord[exitRecord](filepath.Join(dir, exitFile))
}

// recordOf describes a running process (a child just started, or the
// shim itself).
func recordOf(pid int) (procRecord, error) {
	st, _, err := procStat(pid)
	if err != nil {
		return procRecord{}, err
	}
	return procRecord{Pid: pid, StartTime: st}, nil
}

// statFields returns the fields of /proc/PID/stat from field 3 (state)
// on. The command name (field 2) may hold spaces and parentheses; the
// fields after it start behind the last ')'.
func statFields(pid int) ([]string, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return nil, fmt.Errorf("parse /proc/%d/stat: no command name", pid)
	}
	return strings.Fields(string(data[i+1:])), nil
}

// procStat reads the start time and state letter of pid from /proc.
func procStat(pid int) (startTime uint64, state byte, err error) {
	fields, err := statFields(pid)
	if err != nil {
		return 0, 0, err
	}
	// fields[0] is field 3 (state); field 22 (starttime) is fields[19].
	if len(fields) < 20 {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(fields))
	}
	startTime, err = strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("parse /proc/%d/stat start time: %w", pid, err)
	}
	return startTime, fields[0][0], nil
}

// alive reports whether the process p recorded is still running: same pid,
// same start time, and not a zombie waiting to be reaped.
func (p procRecord) alive() bool {
	if p.Pid <= 0 {
		return false
	}
	st, state, err := procStat(p.Pid)
	if err != nil {
		return false
	}
	return st == p.StartTime && state != 'Z' && state != 'X'
}

// signal sends sig to p if it is still the process recorded.
func (p procRecord) signal(sig syscall.Signal) error {
	if !p.alive() {
		return nil
	}
	if err := syscall.Kill(p.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal pid %d: %w", p.Pid, err)
	}
	return nil
}

// signalGroup sends sig to the process group p leads, if p is still the
// process recorded.
func (p procRecord) signalGroup(sig syscall.Signal) error {
	if !p.alive() {
		return nil
	}
	if err := syscall.Kill(-p.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal process group %d: %w", p.Pid, err)
	}
	return nil
}
