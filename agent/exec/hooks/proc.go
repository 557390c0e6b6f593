package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/procopts"
)

// The process options of a spec (user, groups, workdir, stop_signal,
// ulimits; docs/adr/0059-process-and-container-options.md), read with
// api/procopts as the manager reads them, as the hooks runtime applies
// them to launch, finish and Exec commands. prepare and cleanup run as
// jacod does: they set up and tear down what the replica needs on the
// node.

// proc is how a hook process starts: as whom and with which limits. The
// zero proc starts it as jacod runs. It is resolved by jacod (names
// looked up on the node) and handed to the shim in the launch spec, so
// the shim and the exec helper only ever see numbers.
type proc struct {
	Cred    *credential `json:"cred,omitempty"`
	Rlimits []rlimit    `json:"rlimits,omitempty"`
}

// credential is the user, primary group and supplementary groups.
type credential struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
}

// rlimit is one setrlimit(2) resource with the values the kernel takes.
type rlimit struct {
	Name     string `json:"name"` // RLIMIT_NOFILE, for errors
	Resource int    `json:"resource"`
	Soft     uint64 `json:"soft"`
	Hard     uint64 `json:"hard"`
}

// nonRoot reports whether the process runs as another user than root,
// which needs the replica's files opened to it (grantAccess).
func (p proc) nonRoot() bool { return p.Cred != nil && p.Cred.UID != 0 }

// resolveProc reads the spec's user, groups and ulimits.
func resolveProc(spec *api.ServiceSpec) (proc, error) {
	var p proc
	cred, err := resolveCredential(spec.GetUser(), spec.GetGroups())
	if err != nil {
		return p, err
	}
	p.Cred = cred
	for _, u := range spec.GetUlimits() {
		if err := procopts.CheckUlimit(u); err != nil {
			return p, err
		}
		res, name, _ := procopts.Rlimit(u.GetName()) // known: CheckUlimit
		p.Rlimits = append(p.Rlimits, rlimit{Name: name, Resource: res, Soft: procopts.Value(u.GetSoft()), Hard: procopts.Value(u.GetHard())})
	}
	return p, nil
}

// resolveCredential reads "USER[:GROUP]" and the supplementary groups,
// names looked up in the node's user database. USER alone takes the
// user's primary group, as Docker does; a numeric USER the node does not
// know has none, and is refused without a GROUP rather than given root's
// group on the node's own file system. The supplementary groups are
// exactly groups: neither jacod's nor the user's memberships are added.
// Groups without a user keep jacod's user and group.
func resolveCredential(spec string, groups []string) (*credential, error) {
	if spec == "" && len(groups) == 0 {
		return nil, nil
	}
	cred := &credential{UID: uint32(os.Getuid()), GID: uint32(os.Getgid()), Groups: []uint32{}}
	if spec != "" {
		name, group, hasGroup := strings.Cut(spec, ":")
		uid, gid, known, err := lookupUser(name)
		if err != nil {
			return nil, err
		}
		cred.UID = uid
		switch {
		case hasGroup:
			if cred.GID, err = lookupGroup(group); err != nil {
				return nil, err
			}
		case known:
			cred.GID = gid
		default:
			return nil, fmt.Errorf("user %s: no such user on this node, so no primary group to take: name one (%s:GROUP)", name, name)
		}
	}
	for _, g := range groups {
		gid, err := lookupGroup(g)
		if err != nil {
			return nil, fmt.Errorf("groups: %w", err)
		}
		cred.Groups = append(cred.Groups, gid)
	}
	return cred, nil
}

// lookupUser returns the uid of a user name or number and, when the node
// knows the user, its primary group.
func lookupUser(name string) (uid, gid uint32, known bool, err error) {
	if name == "" {
		return 0, 0, false, errors.New("user: empty name")
	}
	var u *user.User
	if n, perr := strconv.ParseUint(name, 10, 32); perr == nil {
		u, err = user.LookupId(name)
		if errors.As(err, new(user.UnknownUserIdError)) {
			return uint32(n), 0, false, nil
		}
	} else {
		u, err = user.Lookup(name)
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("user %s: %w", name, err)
	}
	id, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return 0, 0, false, fmt.Errorf("user %s: uid %q: %w", name, u.Uid, err)
	}
	g, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return 0, 0, false, fmt.Errorf("user %s: gid %q: %w", name, u.Gid, err)
	}
	return uint32(id), uint32(g), true, nil
}

// lookupGroup returns the gid of a group name, or a number as it is.
func lookupGroup(name string) (uint32, error) {
	if n, err := strconv.ParseUint(name, 10, 32); err == nil {
		return uint32(n), nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, fmt.Errorf("group %s: %w", name, err)
	}
	id, err := strconv.ParseUint(g.Gid, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("group %s: gid %q: %w", name, g.Gid, err)
	}
	return uint32(id), nil
}

// stopSignal reads the spec's stop_signal; 0 (none) is SIGINT, as the
// stop ladder has it.
func stopSignal(spec *api.ServiceSpec) (syscall.Signal, error) {
	if spec.GetStopSignal() == "" {
		return 0, nil
	}
	sig, err := procopts.Signal(spec.GetStopSignal())
	if err != nil {
		return 0, fmt.Errorf("stop_signal: %w", err)
	}
	return sig, nil
}

// checkWorkdir refuses a workdir that is not an absolute path to a
// directory on the node. It is never created: a replica runs on the
// node's own file system, where making directories is not the
// runtime's to do.
func checkWorkdir(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("workdir %q: want an absolute path", dir)
	}
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("workdir %s does not exist on this node (it is not created)", dir)
	}
	if err != nil {
		return fmt.Errorf("workdir: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("workdir %s is not a directory", dir)
	}
	return nil
}

// execHelper is the command that runs the exec stage of the shim: the
// jacod binary (or the test binary acting as it), its arguments and
// environment.
type execHelper struct {
	path string
	args []string
	env  []string
}

// selfHelper is the shim's own binary as the exec helper.
func selfHelper() execHelper {
	return execHelper{path: "/proc/self/exe", args: os.Args, env: os.Environ()}
}

// Exec stage: resource limits cannot be given to a child by os/exec, and
// setting them on the starting process would hold for it too, between
// setrlimit and fork: a low nofile makes the fork's own pipe fail, a low
// address space or data limit starves the Go runtime, and jacod runs
// much else meanwhile (the shim too: its signal forwarding). So a
// process with limits starts as a helper, jacod's own binary run as
// "hook-shim" with shimStageEnv=exec, which reads an execSpec from
// execSpecFD, sets the limits on itself as root (raising a hard limit
// needs it), then its groups, group and user, changes to the directory
// (as the user, so it is refused what the user may not enter) and execs
// the command in its own place: same pid, same process group, so
// everything that records, waits for and signals the process is
// unchanged. An error before the exec is written to execStatusFD, which
// is closed on exec: the starter reads it to end-of-file, as os/exec
// does for its own children, so a command that cannot run fails Start.
const (
	execStage    = "exec"
	execSpecFD   = 3
	execStatusFD = 4
)

// execSpec is what the exec helper runs.
type execSpec struct {
	Path string   `json:"path"`
	Args []string `json:"args"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	Proc proc     `json:"proc"`
}

// start starts cmd (Path, Args, Env, Dir and SysProcAttr set) as p says,
// with start (cmd.Start, or sandbox.start); callers name cmd's original
// Path in its errors. Without limits os/exec sets the credentials in the
// child; with limits cmd becomes the exec helper h.
func (p proc) start(cmd *exec.Cmd, h execHelper, start func(*exec.Cmd) error) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if len(p.Rlimits) == 0 {
		if p.Cred != nil {
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: p.Cred.UID, Gid: p.Cred.GID, Groups: p.Cred.Groups}
		}
		return start(cmd)
	}
	if cmd.Err != nil { // the command's path lookup failed
		return cmd.Err
	}
	spec := execSpec{Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Dir: cmd.Dir, Proc: p}
	data, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("encode exec spec: %w", err)
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("exec spec pipe: %w", err)
	}
	defer specW.Close()
	statusR, statusW, err := os.Pipe()
	if err != nil {
		specR.Close()
		return fmt.Errorf("exec status pipe: %w", err)
	}
	defer statusR.Close()
	cmd.Path, cmd.Args, cmd.Dir = h.path, h.args, ""
	cmd.Env = append(append([]string(nil), h.env...), shimStageEnv+"="+execStage)
	cmd.ExtraFiles = []*os.File{specR, statusW}
	err = start(cmd)
	specR.Close()
	statusW.Close()
	if err != nil {
		return err
	}
	// The helper reads the spec whole before it does anything, so this
	// write ends; should it die first, the read below says so.
	_, werr := specW.Write(data)
	specW.Close()
	word, rerr := io.ReadAll(statusR)
	if len(word) == 0 && werr == nil && rerr == nil {
		return nil
	}
	// Not exec'ed: the helper exits (or already has).
	_ = cmd.Wait()
	if len(word) > 0 {
		return errors.New(string(word))
	}
	return fmt.Errorf("exec helper: %w", errors.Join(werr, rerr))
}

// runExecStage is the exec helper (see execStage). It returns only when
// the command could not be run.
func runExecStage() int {
	syscall.CloseOnExec(execStatusFD)
	status := os.NewFile(execStatusFD, "exec-status")
	fail := func(err error) int {
		fmt.Fprint(status, err)
		status.Close()
		return 127
	}
	in := os.NewFile(execSpecFD, "exec-spec")
	var spec execSpec
	err := json.NewDecoder(in).Decode(&spec)
	in.Close()
	if err != nil {
		return fail(fmt.Errorf("read exec spec: %w", err))
	}
	if err := spec.Proc.apply(); err != nil {
		return fail(err)
	}
	if spec.Dir != "" {
		if err := os.Chdir(spec.Dir); err != nil {
			return fail(err)
		}
	}
	// syscall.Exec also puts back the nofile soft limit the Go runtime
	// raised at start, unless Setrlimit set it.
	err = syscall.Exec(spec.Path, spec.Args, spec.Env)
	return fail(&fs.PathError{Op: "exec", Path: spec.Path, Err: err})
}

// apply sets p on the calling process: limits first, while still root,
// then groups, group and user (Go applies each to every thread).
func (p proc) apply() error {
	for _, l := range p.Rlimits {
		if err := syscall.Setrlimit(l.Resource, &syscall.Rlimit{Cur: l.Soft, Max: l.Hard}); err != nil {
			return fmt.Errorf("set %s to %d:%d: %w", l.Name, l.Soft, l.Hard, err)
		}
	}
	if p.Cred == nil {
		return nil
	}
	groups := make([]int, len(p.Cred.Groups))
	for i, g := range p.Cred.Groups {
		groups[i] = int(g)
	}
	if err := syscall.Setgroups(groups); err != nil {
		return fmt.Errorf("setgroups %v: %w", p.Cred.Groups, err)
	}
	if err := syscall.Setgid(int(p.Cred.GID)); err != nil {
		return fmt.Errorf("setgid %d: %w", p.Cred.GID, err)
	}
	if err := syscall.Setuid(int(p.Cred.UID)); err != nil {
		return fmt.Errorf("setuid %d: %w", p.Cred.UID, err)
	}
	return nil
}

// options are a replica's process options, read and checked.
type options struct {
	proc proc
	dir  string // where launch, finish and Exec commands start
	stop syscall.Signal
}

func (c *controller) options() (options, error) {
	spec := c.rep.Task.GetSpec()
	o := options{dir: c.bundlePath()}
	var err error
	if o.proc, err = resolveProc(spec); err != nil {
		return o, fmt.Errorf("replica %s: %w", c.id(), err)
	}
	if o.stop, err = stopSignal(spec); err != nil {
		return o, fmt.Errorf("replica %s: %w", c.id(), err)
	}
	if wd := spec.GetWorkdir(); wd != "" {
		if err := checkWorkdir(wd); err != nil {
			return o, fmt.Errorf("replica %s: %w", c.id(), err)
		}
		o.dir = wd
	}
	return o, nil
}

// grantAccess opens the replica's hooks, files and notify socket to the
// user it runs as (see access.go); nothing for root.
func (c *controller) grantAccess(p proc) error {
	if !p.nonRoot() {
		return nil
	}
	dir := c.rep.Dir
	if len(c.rep.Files) > 0 {
		dir = c.rep.FilesDir() // below Dir: both are opened
	}
	if err := grantSearch(dir, p.Cred); err != nil {
		return fmt.Errorf("replica %s: %w", c.id(), err)
	}
	return nil
}

// execHelper is jacod's binary as the exec helper of Exec commands, run
// as the shim is.
func (c *controller) execHelper() execHelper {
	argv := append(append([]string(nil), c.rt.shimArgv...), c.rep.Dir)
	return execHelper{path: argv[0], args: argv, env: append(os.Environ(), c.rt.shimEnv...)}
}
