// Package compose turns a compose project (docker compose files, read by
// compose-go: interpolation, .env, several files merged, profiles) into
// what a jaco stack is: service specs plus the networks, secrets and
// configs they name. It calls no daemon; cmd/jaco's stack commands do.
//
// A key jaco cannot honour is refused by name (unsupported_compose_key)
// before anything is deployed, never ignored: an operator who wrote
// privileged: true must not get a replica without it. Every refusal of
// every service and section comes in one error, so one run tells all
// there is to change. The few keys that mean nothing in a cluster
// (container_name, expose, links, build beside an image, restart beside
// deploy.restart_policy) are accepted with one warning line each, as
// docker stack deploy accepts them.
package compose

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// NamespaceLabel is the label every service of a stack carries (and its
// secrets and configs): its value is the stack's name.
const NamespaceLabel = api.StackLabel

// Stack is what a stack deploy writes.
type Stack struct {
	Name string
	// Services are sorted by name; each carries NamespaceLabel.
	Services []*api.ServiceSpec
	Networks []Network
	Secrets  []File
	Configs  []File
	// Volumes are the named volumes the services mount, sorted by name
	// (volumes.go).
	Volumes []Volume
}

// Network is an overlay network a stack's services name.
type Network struct {
	Name   string
	Subnet string
	// External networks exist already; the stack neither creates nor
	// removes them.
	External bool
}

// File is a secret or config: the content is read from Path by the caller
// (compose-go has made it absolute).
type File struct {
	Name     string
	Path     string
	External bool
}

// Options say what to load.
type Options struct {
	// Files are the compose files, later ones overriding earlier ones.
	Files []string
	// Name is the stack's name (and the compose project's).
	Name string
	// Env is the environment interpolation sees (os.Environ() for the
	// CLI), and all it sees: as docker stack deploy, no .env file is read.
	Env []string
	// Profiles enable services with those profiles (default: those
	// COMPOSE_PROFILES in Env names).
	Profiles []string
	// Warn is given each warning line (a key accepted without effect or
	// read as its cluster counterpart, such as a bridge network), in a
	// stable order, also when Load refuses the files; nil drops them.
	Warn func(line string)
}

// Load reads the files and translates the project.
func Load(ctx context.Context, o Options) (*Stack, error) {
	var (
		mu       sync.Mutex
		findings []loader.UnsupportedAttribute
	)
	report := func(f []loader.UnsupportedAttribute) {
		mu.Lock()
		defer mu.Unlock()
		findings = append(findings, f...)
	}
	po, err := cli.NewProjectOptions(o.Files,
		cli.WithName(o.Name),
		cli.WithEnv(o.Env),
		// No .env and no env files: docker stack deploy reads neither, and
		// substitutes as its own CLI does (interpolate.go).
		cli.WithLoadOptions(useDockerSubstitute),
		cli.WithDefaultProfiles(o.Profiles...),
		cli.WithLoadOptions(loader.WithSupportedAttributes(supported, report)),
	)
	if err != nil {
		return nil, fmt.Errorf("compose files: %w", err)
	}
	project, err := po.LoadProject(ctx)
	if err != nil {
		return nil, fmt.Errorf("compose files: %w", err)
	}
	var keys []string
	for _, f := range findings {
		parts := pathParts(f.Path)
		if len(parts) >= 2 && parts[0] == "services" {
			// A service left out by its profiles is not deployed: what it
			// holds does not matter.
			if _, on := project.Services[parts[1]]; !on {
				continue
			}
			// build is the translation's to judge: a warning beside an
			// image, a refusal with the remedy without one.
			if len(parts) == 3 && parts[2] == "build" {
				continue
			}
		}
		keys = append(keys, keyName(f.Path))
	}
	st, refused, warnings, err := translate(project, o.Name)
	if o.Warn != nil {
		for _, w := range warnings {
			o.Warn(w)
		}
	}
	// Every refusal at once, those of values (a named volume) with those
	// of keys, so one run tells the operator all there is to change.
	if keys = append(keys, refused...); len(keys) > 0 {
		return nil, unsupportedError(keys, err)
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

// unsupportedError names every key refused; also holds the mistakes in
// values found in the same pass, so they are not left for the next run.
func unsupportedError(keys []string, also error) error {
	slices.Sort(keys)
	keys = slices.Compact(keys)
	msg := strings.Join(keys, ", ") + ": jaco cannot honour these compose keys; nothing was changed"
	if also != nil {
		msg += "; also: " + also.Error()
	}
	return reason.Error(codes.InvalidArgument, reason.UnsupportedComposeKey, "%s", msg)
}

// Translate maps a loaded project to a stack named name; its warnings are
// dropped (Load gives them).
func Translate(p *types.Project, name string) (*Stack, error) {
	st, refused, _, err := translate(p, name)
	if len(refused) > 0 {
		return nil, unsupportedError(refused, err)
	}
	return st, err
}

// translate returns the stack, or the keys it refuses and the mistakes
// in values, of every service (one pass), with the warnings either way.
func translate(p *types.Project, name string) (*Stack, []string, []string, error) {
	t := &translator{stack: name, p: p}
	st := &Stack{Name: name}
	st.Networks = t.networks()
	st.Secrets = t.files("secrets", secretObjects(p.Secrets))
	st.Configs = t.files("configs", configObjects(p.Configs))
	var errs valueErrors
	for _, svcName := range slices.Sorted(maps.Keys(p.Services)) {
		spec, err := t.service(p.Services[svcName])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		st.Services = append(st.Services, spec)
	}
	// After the services: only the volumes they mount are the stack's.
	vols, volErr := t.stackVolumes()
	if volErr != nil {
		errs = append(errs, volErr)
	}
	st.Volumes = vols
	warnings := t.warnings()
	var err error
	if len(errs) > 0 {
		err = errs
	}
	if len(t.unsupported) > 0 || err != nil {
		return nil, t.unsupported, warnings, err
	}
	return st, nil, warnings, nil
}

// valueErrors are the mistakes in values of several services, one line.
type valueErrors []error

func (e valueErrors) Error() string {
	texts := make([]string, len(e))
	for i, err := range e {
		texts[i] = err.Error()
	}
	return strings.Join(texts, "; ")
}

// Unwrap gives each, as errors.Join's result does.
func (e valueErrors) Unwrap() []error { return e }

// translator gathers every refusal, so one run names all of them, and
// every warning.
type translator struct {
	stack       string
	p           *types.Project
	unsupported []string
	// usedVolumes are the keys of the top-level volumes the services
	// mount.
	usedVolumes map[string]bool
	// ignored holds, by key and what is said of it, the services whose
	// key was accepted without (full) effect: one warning line each.
	ignored map[[2]string][]string
	// notes are the other warning lines (of top-level sections).
	notes []string
}

// ignore records that service's key is accepted, with why.
func (t *translator) ignore(key, service, why string) {
	if t.ignored == nil {
		t.ignored = map[[2]string][]string{}
	}
	k := [2]string{key, why}
	t.ignored[k] = append(t.ignored[k], service)
}

// warnings are the lines to print, sorted: one per key and reason, the
// services named.
func (t *translator) warnings() []string {
	var out []string
	for _, k := range slices.SortedFunc(maps.Keys(t.ignored), func(a, b [2]string) int {
		return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1])
	}) {
		svcs := slices.Sorted(slices.Values(t.ignored[k]))
		word := "services"
		if len(svcs) == 1 {
			word = "service"
		}
		out = append(out, fmt.Sprintf("compose key %s (%s %s): %s", k[0], word, strings.Join(svcs, ", "), k[1]))
	}
	return append(out, t.notes...)
}

func (t *translator) refuse(key, why string) {
	if why != "" {
		key += " (" + why + ")"
	}
	t.unsupported = append(t.unsupported, key)
}

// Name is how a stack names what the file calls key: NAME_key.
func Name(stack, key string) string { return stack + "_" + key }

func (t *translator) networks() []Network {
	var out []Network
	for _, key := range slices.Sorted(maps.Keys(t.p.Networks)) {
		n := t.p.Networks[key]
		switch n.Driver {
		case "", "overlay":
		case "bridge":
			// A file written for one host (docker compose's default
			// driver): the stack's network is what its services share,
			// and in a cluster that is an overlay.
			t.notes = append(t.notes, fmt.Sprintf("compose key networks.%s.driver: bridge is read as overlay, the stack's own network across the cluster", key))
		default:
			t.refuse("networks."+key+".driver", n.Driver+"; jaco networks are overlay")
		}
		// attachable lets standalone containers join a Swarm network;
		// jaco runs no standalone containers, so it grants nothing and
		// takes nothing away. driver_opts.encrypted asks for what jaco's
		// overlay always is: WireGuard between nodes (docs/design.md,
		// Overlay networks). Both are accepted as they are.
		if n.External {
			out = append(out, Network{Name: t.networkName(key), External: true})
			continue
		}
		if n.Name != "" && n.Name != Name(t.stack, key) && n.Name != key {
			t.refuse("networks."+key+".name", "without external: true")
		}
		if n.Internal {
			// Replicas keep eth0 on their node's bridge for the outside
			// world (docs/adr/0026); an overlay has no default route to
			// take away, so internal cannot be enforced.
			t.notes = append(t.notes, fmt.Sprintf("compose key networks.%s.internal: not enforced; replicas still reach outside the cluster through their node's bridge", key))
		}
		net := Network{Name: Name(t.stack, key)}
		switch len(n.Ipam.Config) {
		case 0:
		case 1:
			net.Subnet = n.Ipam.Config[0].Subnet
		default:
			t.refuse("networks."+key+".ipam.config", "more than one subnet")
		}
		out = append(out, net)
	}
	return out
}

// networkName is the jaco name of the network the file calls key.
func (t *translator) networkName(key string) string {
	if n, ok := t.p.Networks[key]; ok && bool(n.External) {
		if n.Name != "" {
			return n.Name
		}
		return key
	}
	return Name(t.stack, key)
}

func secretObjects(m types.Secrets) map[string]types.FileObjectConfig {
	out := make(map[string]types.FileObjectConfig, len(m))
	for k, v := range m {
		out[k] = types.FileObjectConfig(v)
	}
	return out
}

func configObjects(m types.Configs) map[string]types.FileObjectConfig {
	out := make(map[string]types.FileObjectConfig, len(m))
	for k, v := range m {
		out[k] = types.FileObjectConfig(v)
	}
	return out
}

// files lists the stack's secrets or configs (kind): from a file, or
// external (existing already, by name).
func (t *translator) files(kind string, m map[string]types.FileObjectConfig) []File {
	var out []File
	for _, key := range slices.Sorted(maps.Keys(m)) {
		f := m[key]
		if f.External {
			out = append(out, File{Name: t.fileName(m, key), External: true})
			continue
		}
		if f.File == "" {
			t.refuse(kind+"."+key, "neither file nor external")
			continue
		}
		if f.Name != "" && f.Name != Name(t.stack, key) && f.Name != key {
			t.refuse(kind+"."+key+".name", "without external: true")
		}
		out = append(out, File{Name: Name(t.stack, key), Path: f.File})
	}
	return out
}

// fileName is the jaco name of the secret or config the file calls key.
func (t *translator) fileName(m map[string]types.FileObjectConfig, key string) string {
	if f, ok := m[key]; ok && bool(f.External) {
		if f.Name != "" {
			return f.Name
		}
		return key
	}
	return Name(t.stack, key)
}
