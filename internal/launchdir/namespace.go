package launchdir

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// Labels every service of a namespace carries; they are the namespace
// (docs/adr/0027-launch-configurations.md).
const (
	// LabelID is the namespace's UUID.
	LabelID = "jaco.launch.id"
	// LabelName is its name (-L), or "" when it has none.
	LabelName = "jaco.launch.name"
	// LabelService is the service's directory name in the configuration.
	LabelService = "jaco.launch.service"
	// LabelReplicas is the configured replica count, which `launch
	// --resume` scales a stopped service back to.
	LabelReplicas = "jaco.launch.replicas"
	// LabelDir is the configuration's directory on the launching host,
	// which `launch --resume` reads again to re-create missing services.
	LabelDir = "jaco.launch.dir"
	// LabelServices lists the configuration's services (directory names,
	// comma-separated): what `launch --resume` finds missing.
	LabelServices = "jaco.launch.services"
	// LabelMetaPrefix begins the label of each -D key.
	LabelMetaPrefix = "jaco.launch.meta."
)

// Environment every hook of a namespace sees.
const (
	EnvNamespaceID = "JACO_NAMESPACE_ID"
	EnvMetaPrefix  = "JACO_META_"
)

// Namespace is one launch of a configuration.
type Namespace struct {
	ID   string // a UUID
	Name string // -L, may be ""
	Meta map[string]string
}

// nameRule is what -L may be: a service name's prefix, without '_' so that
// PREFIX_SERVICE splits one way only.
var nameRule = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,31}$`)

// CheckName refuses a namespace name (-L) that cannot prefix service names.
func CheckName(name string) error {
	if !nameRule.MatchString(name) {
		return fmt.Errorf("launch name %q: use 1-32 lowercase letters, digits, '.' or '-', starting with a letter or digit", name)
	}
	return nil
}

var metaKey = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)

// ParseMeta reads -D arguments: key=value, or a bare key (a flag) which is
// "true". Keys become JACO_META_<KEY> (uppercased, '-' as '_'), so two
// keys that would give the same variable are refused, as is a key given
// twice.
func ParseMeta(args []string) (map[string]string, error) {
	meta := map[string]string{}
	envs := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			v = "true"
		}
		if !metaKey.MatchString(k) {
			return nil, fmt.Errorf("-D %q: the key is 1-64 letters, digits, '_' or '-', starting with a letter", a)
		}
		if strings.ContainsAny(v, "\x00\n") {
			return nil, fmt.Errorf("-D %q: the value may not hold a newline or NUL", a)
		}
		env := MetaEnv(k)
		if other, dup := envs[env]; dup {
			return nil, fmt.Errorf("-D %s and -D %s both give %s", other, k, env)
		}
		envs[env], meta[k] = k, v
	}
	return meta, nil
}

// MetaEnv is the variable a metadata key is seen as by the hooks.
func MetaEnv(key string) string {
	return EnvMetaPrefix + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
}

// Prefix is what the namespace's service names begin with: its name, or
// the first 8 characters of its id when it has none.
func (ns Namespace) Prefix() string {
	if ns.Name != "" {
		return ns.Name
	}
	return ns.ID[:min(8, len(ns.ID))]
}

// ServiceName is the cluster's name of the configuration's service svc.
func (ns Namespace) ServiceName(svc string) string { return ns.Prefix() + "_" + svc }

// Instantiate returns the specs of cfg's services in namespace ns, in
// dependency order: names prefixed, dependencies too, the namespace in
// the labels and in every hook's environment.
func Instantiate(cfg *Config, ns Namespace) ([]*api.ServiceSpec, error) {
	names := make([]string, len(cfg.Services))
	for i, s := range cfg.Services {
		names[i] = s.Name
	}
	slices.Sort(names)
	var out []*api.ServiceSpec
	for _, s := range cfg.Services {
		spec := proto.Clone(s.Spec).(*api.ServiceSpec)
		spec.Name = ns.ServiceName(s.Name)
		if len(spec.Name) > 63 {
			return nil, fmt.Errorf("service name %s is longer than 63 characters: use a shorter -L", spec.Name)
		}
		for i, d := range spec.DependsOn {
			spec.DependsOn[i] = ns.ServiceName(d)
		}
		spec.Labels = ns.labels()
		spec.Labels[LabelService] = s.Name
		spec.Labels[LabelServices] = strings.Join(names, ",")
		spec.Labels[LabelDir] = cfg.Dir
		spec.Labels[LabelReplicas] = strconv.FormatUint(s.Spec.Replicas, 10)
		spec.Env = append(spec.Env, ns.env()...)
		out = append(out, spec)
	}
	return out, nil
}

func (ns Namespace) labels() map[string]string {
	l := map[string]string{LabelID: ns.ID, LabelName: ns.Name}
	for k, v := range ns.Meta {
		l[LabelMetaPrefix+k] = v
	}
	return l
}

// env is the namespace's variables, sorted so that specs compare equal.
func (ns Namespace) env() []string {
	env := []string{EnvNamespaceID + "=" + ns.ID}
	for k, v := range ns.Meta {
		env = append(env, MetaEnv(k)+"="+v)
	}
	slices.Sort(env[1:])
	return env
}

// FromLabels reads the namespace a service's labels say it belongs to;
// ok is false for a service of no namespace.
func FromLabels(labels map[string]string) (ns Namespace, ok bool) {
	id, ok := labels[LabelID]
	if !ok {
		return Namespace{}, false
	}
	ns = Namespace{ID: id, Name: labels[LabelName], Meta: map[string]string{}}
	for k, v := range labels {
		if key, ok := strings.CutPrefix(k, LabelMetaPrefix); ok {
			ns.Meta[key] = v
		}
	}
	return ns, true
}
