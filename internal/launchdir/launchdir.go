// Package launchdir reads a launch configuration (the clusterd spec's
// "configuration"): a directory holding one subdirectory per service, each
// with a `service` file of settings and the service's hook executables
// (prepare, launch, finish, cleanup; launch is required).
//
// Load validates the whole directory before returning anything, and
// reports every problem it finds, each naming the file and line, so that
// `jaco launch` creates nothing from a directory with any part wrong.
// Instantiate turns a loaded configuration into the service specs of one
// namespace (one launch of it); the namespace lives in the specs' labels
// (docs/adr/0027-launch-configurations.md).
package launchdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/jaco-project/jaco/api"
)

// ServiceFile is the name of the settings file in each service directory.
const ServiceFile = "service"

// MaxHookBytes bounds a service's hooks together: the manager refuses a
// larger hook bundle (manager/controlapi's maxBundleBytes), and checking
// it here keeps a launch from being refused half way.
const MaxHookBytes = 1 << 20

// serviceName is what may name a service directory: the namespace prefix
// and '_' go in front of it, and the whole must be a service name (at
// most 63 characters: a name of up to 32, '_', up to 30).
var serviceName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,29}$`)

// Config is a loaded, valid launch configuration.
type Config struct {
	// Dir is the directory it was read from, made absolute.
	Dir string
	// Services are sorted so that each comes after those it depends on
	// (ties by name).
	Services []*Service
}

// Service is one service directory: its spec with names as the
// directory has them (unprefixed, depends_on too), no labels and no
// namespace environment.
type Service struct {
	Name string
	Spec *api.ServiceSpec
}

// Problem is one thing wrong with the directory: File (relative to the
// directory) and Line (0 when the problem is the file as a whole).
type Problem struct {
	File string
	Line int
	Msg  string
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Msg)
}

// Invalid is Load's error for a directory that is not a valid
// configuration: every problem found, in file order.
type Invalid struct {
	Dir      string
	Problems []Problem
}

func (e *Invalid) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return fmt.Sprintf("launch configuration %s is invalid: %s", e.Dir, strings.Join(lines, "; "))
}

// Load reads and validates the configuration in dir. An error that is not
// an *Invalid is one of reading (the directory is missing, a file cannot
// be read).
func Load(dir string) (*Config, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("launch configuration %s: %w", dir, err)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil, fmt.Errorf("launch configuration: %w", err)
	}
	cfg := &Config{Dir: abs}
	var probs []Problem
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue // editors' and version control's files
		}
		if !e.IsDir() {
			probs = append(probs, Problem{File: name, Msg: "not a service directory (a configuration holds one directory per service)"})
			continue
		}
		if !serviceName.MatchString(name) {
			probs = append(probs, Problem{File: name, Msg: "a service directory's name is 1-30 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit"})
			continue
		}
		svc, ps, err := loadService(abs, name)
		if err != nil {
			return nil, err
		}
		probs = append(probs, ps...)
		if svc != nil {
			cfg.Services = append(cfg.Services, svc)
		}
	}
	if len(cfg.Services) == 0 && len(probs) == 0 {
		probs = append(probs, Problem{File: ".", Msg: "no service directories"})
	}
	probs = append(probs, checkDependencies(cfg.Services)...)
	if len(probs) > 0 {
		return nil, &Invalid{Dir: abs, Problems: probs}
	}
	cfg.Services = dependencyOrder(cfg.Services)
	return cfg, nil
}

// loadService reads one service directory: the service file and the hooks.
// The service is nil when it has problems.
func loadService(root, name string) (*Service, []Problem, error) {
	dir := filepath.Join(root, name)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("launch configuration: %w", err)
	}
	bundle := &api.HookBundle{Files: map[string][]byte{}}
	var probs []Problem
	var settings []byte
	haveSettings := false
	for _, e := range entries {
		rel := filepath.Join(name, e.Name())
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if !e.Type().IsRegular() {
			probs = append(probs, Problem{File: rel, Msg: "not a regular file (a service directory holds the service file and hooks)"})
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, nil, fmt.Errorf("launch configuration: %w", err)
		}
		switch {
		case e.Name() == ServiceFile:
			settings, haveSettings = data, true
		case slices.Contains(api.HookNames, e.Name()):
			info, err := e.Info()
			if err != nil {
				return nil, nil, fmt.Errorf("launch configuration: %w", err)
			}
			if info.Mode().Perm()&0o111 == 0 {
				probs = append(probs, Problem{File: rel, Msg: "a hook must be executable (chmod +x)"})
			}
			bundle.Files[e.Name()] = data
		default:
			probs = append(probs, Problem{File: rel, Msg: fmt.Sprintf("unknown file: a service directory holds %q and the hooks %s", ServiceFile, strings.Join(api.HookNames, ", "))})
		}
	}
	spec := &api.ServiceSpec{Name: name, Bundle: bundle, Replicas: 1}
	if haveSettings {
		probs = append(probs, parseSettings(filepath.Join(name, ServiceFile), settings, spec)...)
	} else {
		probs = append(probs, Problem{File: filepath.Join(name, ServiceFile), Msg: "missing: every service directory needs a service file (it may be empty)"})
	}
	if _, ok := bundle.Files[api.HookLaunch]; !ok {
		probs = append(probs, Problem{File: filepath.Join(name, api.HookLaunch), Msg: "missing: every service needs a launch hook"})
	}
	size := 0
	for _, data := range bundle.Files {
		size += len(data)
	}
	if size > MaxHookBytes {
		probs = append(probs, Problem{File: name, Msg: fmt.Sprintf("the hooks hold %d bytes; the limit is %d (they travel with the service to every node)", size, MaxHookBytes)})
	}
	if len(probs) > 0 {
		return nil, probs, nil
	}
	return &Service{Name: name, Spec: spec}, nil, nil
}

// checkDependencies refuses depends_on naming a service the directory does
// not have, and cycles.
func checkDependencies(svcs []*Service) []Problem {
	byName := map[string]*Service{}
	for _, s := range svcs {
		byName[s.Name] = s
	}
	var probs []Problem
	for _, s := range svcs {
		for _, d := range s.Spec.DependsOn {
			if byName[d] == nil {
				probs = append(probs, Problem{File: filepath.Join(s.Name, ServiceFile), Msg: fmt.Sprintf("depends_on %s: the configuration has no service %s", d, d)})
			}
		}
	}
	if len(probs) > 0 {
		return probs
	}
	if cycle := findCycle(svcs, byName); cycle != nil {
		probs = append(probs, Problem{File: filepath.Join(cycle[0], ServiceFile), Msg: "dependency cycle: " + strings.Join(cycle, " -> ")})
	}
	return probs
}

func findCycle(svcs []*Service, byName map[string]*Service) []string {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(s *Service) []string
	visit = func(s *Service) []string {
		switch state[s.Name] {
		case open:
			i := slices.Index(path, s.Name)
			return append(slices.Clone(path[i:]), s.Name)
		case done:
			return nil
		}
		state[s.Name] = open
		path = append(path, s.Name)
		for _, d := range s.Spec.DependsOn {
			if c := visit(byName[d]); c != nil {
				return c
			}
		}
		path = path[:len(path)-1]
		state[s.Name] = done
		return nil
	}
	for _, s := range svcs {
		if c := visit(s); c != nil {
			return c
		}
	}
	return nil
}

// dependencyOrder sorts services after their dependencies (they have no
// cycle); ties keep the given (name) order.
func dependencyOrder(svcs []*Service) []*Service {
	byName := map[string]*Service{}
	for _, s := range svcs {
		byName[s.Name] = s
	}
	placed := map[string]bool{}
	var out []*Service
	var visit func(s *Service)
	visit = func(s *Service) {
		if placed[s.Name] {
			return
		}
		placed[s.Name] = true
		for _, d := range s.Spec.DependsOn {
			visit(byName[d])
		}
		out = append(out, s)
	}
	for _, s := range svcs {
		visit(s)
	}
	return out
}

// ErrInvalid is what errors.Is finds in an *Invalid.
var ErrInvalid = errors.New("invalid launch configuration")

// Is lets errors.Is(err, ErrInvalid) find an *Invalid.
func (e *Invalid) Is(target error) bool { return target == ErrInvalid }
