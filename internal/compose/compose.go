// Package compose turns a compose project (docker compose files, read by
// compose-go: interpolation, .env, several files merged, profiles) into
// what a jaco stack is: service specs plus the networks, secrets and
// configs they name. It calls no daemon; cmd/jaco's stack commands do.
//
// A key jaco cannot honour is refused by name (unsupported_compose_key)
// before anything is translated, never ignored: an operator who wrote
// privileged: true must not get a replica without it.
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
	// Env is the environment interpolation and .env see (os.Environ()
	// for the CLI); the .env file of the first file's directory adds to it.
	Env []string
	// Profiles enable services with those profiles (default: those
	// COMPOSE_PROFILES in Env names).
	Profiles []string
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
		cli.WithEnvFiles(),
		cli.WithDotEnv,
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
		parts := f.Path.Parts()
		// A service left out by its profiles is not deployed: what it
		// holds does not matter.
		if len(parts) >= 2 && parts[0] == "services" {
			if _, on := project.Services[parts[1]]; !on {
				continue
			}
		}
		keys = append(keys, keyName(f.Path))
	}
	st, refused, err := translate(project, o.Name)
	// Every refusal at once, those of values (a named volume) with those
	// of keys, so one run tells the operator all there is to change.
	if keys = append(keys, refused...); len(keys) > 0 {
		return nil, unsupportedError(keys)
	}
	return st, err
}

func unsupportedError(keys []string) error {
	slices.Sort(keys)
	keys = slices.Compact(keys)
	return reason.Error(codes.InvalidArgument, reason.UnsupportedComposeKey,
		"%s: jaco cannot honour these compose keys; nothing was changed", strings.Join(keys, ", "))
}

// Translate maps a loaded project to a stack named name.
func Translate(p *types.Project, name string) (*Stack, error) {
	st, refused, err := translate(p, name)
	if len(refused) > 0 {
		return nil, unsupportedError(refused)
	}
	return st, err
}

// translate returns the stack, or the keys it refuses, or an error in a
// value.
func translate(p *types.Project, name string) (*Stack, []string, error) {
	t := &translator{stack: name, p: p}
	st := &Stack{Name: name}
	st.Networks = t.networks()
	st.Secrets = t.files("secrets", secretObjects(p.Secrets))
	st.Configs = t.files("configs", configObjects(p.Configs))
	for _, svcName := range slices.Sorted(maps.Keys(p.Services)) {
		spec, err := t.service(p.Services[svcName])
		if err != nil {
			return nil, t.unsupported, err
		}
		st.Services = append(st.Services, spec)
	}
	if len(t.unsupported) > 0 {
		return nil, t.unsupported, nil
	}
	return st, nil, nil
}

// translator gathers every refusal, so one run names all of them.
type translator struct {
	stack       string
	p           *types.Project
	unsupported []string
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
		if n.Driver != "" && n.Driver != "overlay" {
			t.refuse("networks."+key+".driver", n.Driver+"; jaco networks are overlay")
		}
		if n.External {
			out = append(out, Network{Name: t.networkName(key), External: true})
			continue
		}
		if n.Name != "" && n.Name != Name(t.stack, key) && n.Name != key {
			t.refuse("networks."+key+".name", "without external: true")
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
