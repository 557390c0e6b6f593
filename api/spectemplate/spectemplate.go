// Package spectemplate expands Docker Swarm's service templates per
// replica: Go templates such as {{.Task.Slot}} in a service spec's env
// values, hostname, label values, bind mount sources and secret and config
// targets. The manager checks them when it takes a spec (Check) and keeps
// them literally; each agent expands them for the replicas it runs, with
// its own node's values, in a copy of the spec only its runtime sees
// (Expand, docs/design.md §9).
//
// The data are Swarm's (Context), with one difference: .Task.Name is
// jaco's replica name (api.ReplicaName: SERVICE.SLOT, or SERVICE.HOSTNAME
// for a global service), not Swarm's SERVICE.SLOT.TASKID.
//
// Templates see data and a few functions that compare, index and join
// only: no range or template actions (nested loops could run and write
// without bound on an agent), no call, print, printf, html, js, urlquery
// or slice; what they write is bounded too (MaxExpandedBytes).
package spectemplate

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// Context is the data a template sees, by Swarm's names. None of its
// types may have methods: text/template lets a template call any method
// of its data.
type Context struct {
	Service Service
	Node    Node
	Task    Task
}

// Service is .Service.
type Service struct {
	ID, Name string
	// Labels are the spec's labels as stored (unexpanded).
	Labels map[string]string
}

// Node is .Node: the node the replica runs on.
type Node struct {
	ID string
	// Hostname is the node's name in the cluster (api.Node.hostname, what
	// `jaco node ls` shows; the machine's hostname unless the node was
	// given another name).
	Hostname string
	Platform Platform
}

// Platform is .Node.Platform, as a Docker engine reports it: OS is
// runtime.GOOS ("linux"), Architecture the kernel's machine name (uname -m:
// "x86_64", "aarch64"), not Go's.
type Platform struct {
	OS, Architecture string
}

// Task is .Task.
type Task struct {
	ID string
	// Name is api.ReplicaName of the task (SERVICE.SLOT or SERVICE.HOSTNAME).
	Name string
	// Slot is the replica's slot number; for a global service's replica
	// (slot 0) the node's id, as Swarm does.
	Slot string
}

// NewContext is the context of task t on node: the service's from the
// task and its spec as stored, the node's as given.
func NewContext(t *api.Task, node Node) Context {
	svc, slot := serviceAndSlot(t, node.ID)
	return Context{
		Service: svc,
		Node:    node,
		Task:    Task{ID: t.GetId(), Name: api.ReplicaName(t, node.Hostname), Slot: slot},
	}
}

// serviceAndSlot are task t's .Service (from the task and its spec as
// stored) and .Task.Slot: its slot number, or for a global replica (slot
// 0) nodeID. NewContext and TaskVolumeSource both take them from here, so
// the agent and the scheduler name a replica's volume alike.
func serviceAndSlot(t *api.Task, nodeID string) (Service, string) {
	name := t.GetServiceName()
	if name == "" {
		name = t.GetSpec().GetName()
	}
	slot := strconv.FormatUint(t.GetSlot(), 10)
	if t.GetSlot() == 0 {
		slot = nodeID
	}
	return Service{ID: t.GetServiceId(), Name: name, Labels: t.GetSpec().GetLabels()}, slot
}

// HostPlatform is this machine's platform, as a Docker engine on it would
// report it.
func HostPlatform() Platform {
	return Platform{OS: runtime.GOOS, Architecture: Architecture(runtime.GOARCH)}
}

// machines maps Go's architecture names to the kernel's (uname -m), which
// is what a Docker engine reports and Swarm templates show. Those alike in
// both (ppc64le, s390x, riscv64) are left out.
var machines = map[string]string{
	"amd64":    "x86_64",
	"arm64":    "aarch64",
	"386":      "i686",
	"arm":      "armv7l",
	"loong64":  "loongarch64",
	"mips64le": "mips64",
}

// Architecture is the kernel's machine name for Go's architecture goarch
// (amd64 → x86_64, arm64 → aarch64); goarch itself where the two agree or
// it is not known.
func Architecture(goarch string) string {
	if m, ok := machines[goarch]; ok {
		return m
	}
	return goarch
}

// MaxExpandedBytes bounds what the templates of one spec write in all,
// twice the manager's bound on a whole encoded spec: a template printing
// the labels over and over could otherwise fill an agent's memory.
const MaxExpandedBytes = 4 << 20

// ErrTooLarge is returned when a spec's templates write more than
// MaxExpandedBytes.
var ErrTooLarge = fmt.Errorf("templates expand to more than %d bytes", MaxExpandedBytes)

// Error is a template that cannot be parsed, uses what is not offered, or
// fails to execute.
type Error struct {
	// Field names the spec field: "env KEY", "hostname", "label KEY",
	// "mount source for TARGET", "secret NAME target", "config NAME target".
	Field string
	Err   error
}

func (e *Error) Error() string {
	// text/template names the template (the field) again: once is enough.
	msg := e.Err.Error()
	msg = strings.TrimPrefix(msg, "template: "+e.Field+":")
	msg = strings.Replace(msg, "executing \""+e.Field+"\" at ", "", 1)
	return "template in " + e.Field + ": " + strings.TrimSpace(msg)
}

func (e *Error) Unwrap() error { return e.Err }

// offered are the functions a template may call: Swarm's join and the
// builtins that compare and index, none of which makes a string larger
// than its arguments. print and printf are left out: they would build
// strings of any size before anything is written, outside the budget.
var offered = map[string]bool{
	"and": true, "or": true, "not": true,
	"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true,
	"index": true, "len": true, "join": true,
}

// Templated reports whether s holds a template: a string without "{{"
// has no action, so it expands to itself and costs nothing.
func Templated(s string) bool { return strings.Contains(s, "{{") }

// parseField parses s, the template of field, and refuses what is not
// offered.
func (e *expander) parseField(field, s string) (*template.Template, error) {
	tmpl, err := template.New(field).Option("missingkey=error").Funcs(e.funcs).Parse(s)
	if err != nil {
		return nil, &Error{field, err}
	}
	for _, t := range tmpl.Templates() {
		if t.Name() != field {
			return nil, &Error{field, errors.New("define and block are not offered")}
		}
	}
	if tmpl.Tree == nil {
		return tmpl, nil
	}
	if err := checkNode(tmpl.Root); err != nil {
		return nil, &Error{field, err}
	}
	return tmpl, nil
}

// checkNode refuses the actions and functions templates are not offered,
// wherever they appear under root.
func checkNode(root parse.Node) error {
	var err error
	walk(root, func(n parse.Node) {
		if err != nil {
			return
		}
		switch n := n.(type) {
		case *parse.IdentifierNode:
			if !offered[n.Ident] {
				err = fmt.Errorf("function %q is not offered (only %s)", n.Ident, offeredList())
			}
		case *parse.ListNode, *parse.ActionNode, *parse.PipeNode, *parse.CommandNode,
			*parse.IfNode, *parse.WithNode, *parse.ChainNode,
			*parse.TextNode, *parse.CommentNode, *parse.FieldNode, *parse.VariableNode, *parse.DotNode,
			*parse.NilNode, *parse.BoolNode, *parse.NumberNode, *parse.StringNode:
		case *parse.RangeNode:
			err = errors.New("range is not offered")
		case *parse.TemplateNode:
			err = errors.New("template is not offered")
		default:
			err = fmt.Errorf("%s is not offered", n)
		}
	})
	return err
}

func offeredList() string {
	return strings.Join(slices.Sorted(maps.Keys(offered)), ", ")
}

// expander expands the fields of one spec within one budget: left is
// how many bytes its templates may still write (and join may still make).
type expander struct {
	ctx   Context
	left  int
	funcs template.FuncMap
}

func newExpander(ctx Context) *expander {
	e := &expander{ctx: ctx, left: MaxExpandedBytes}
	e.funcs = template.FuncMap{"join": e.join}
	return e
}

// join is Swarm's ({{join "-" .Service.Name .Task.Slot}}), its result
// taken from the budget: joined again and again, strings would grow
// without bound before any is written.
func (e *expander) join(sep string, elems ...string) (string, error) {
	n := len(sep) * max(len(elems)-1, 0)
	for _, s := range elems {
		n += len(s)
	}
	if n > e.left {
		return "", ErrTooLarge
	}
	e.left -= n
	return strings.Join(elems, sep), nil
}

// budgetWriter takes what a template writes while the budget lasts.
type budgetWriter struct {
	b    *strings.Builder
	left *int
}

func (w budgetWriter) Write(p []byte) (int, error) {
	if len(p) > *w.left {
		return 0, ErrTooLarge
	}
	*w.left -= len(p)
	return w.b.Write(p)
}

// expand is s with its template executed; s itself when it holds none.
func (e *expander) expand(field, s string) (string, error) {
	if !Templated(s) {
		return s, nil
	}
	tmpl, err := e.parseField(field, s)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := tmpl.Execute(budgetWriter{&b, &e.left}, e.ctx); err != nil {
		return "", &Error{field, err}
	}
	return b.String(), nil
}

// hasTemplates reports whether any field templates may be in holds one.
func hasTemplates(spec *api.ServiceSpec) bool {
	if Templated(spec.GetHostname()) {
		return true
	}
	for _, e := range spec.GetEnv() {
		if Templated(e) {
			return true
		}
	}
	for _, v := range spec.GetLabels() {
		if Templated(v) {
			return true
		}
	}
	for _, m := range spec.GetMounts() {
		if Templated(m.GetSource()) {
			return true
		}
	}
	for _, refs := range [2][]*api.FileReference{spec.GetSecrets(), spec.GetConfigs()} {
		for _, ref := range refs {
			if Templated(ref.GetTarget()) {
				return true
			}
		}
	}
	return false
}

// Expand returns spec with every template expanded for ctx: env values
// (KEY=VALUE, the value only), hostname, label values, mount sources,
// secret and config targets. spec is not changed: the result is a copy,
// or spec itself when no field holds a template (the common case, which
// then costs no copy), so the caller must not change the result. A bind
// mount's source must still be an absolute path once expanded.
func Expand(spec *api.ServiceSpec, ctx Context) (*api.ServiceSpec, error) {
	if !hasTemplates(spec) {
		return spec, nil
	}
	out := proto.CloneOf(spec)
	e := newExpander(ctx)
	var err error
	if out.Hostname, err = e.expand("hostname", out.Hostname); err != nil {
		return nil, err
	}
	for i, kv := range out.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !Templated(v) {
			continue
		}
		if v, err = e.expand("env "+k, v); err != nil {
			return nil, err
		}
		out.Env[i] = k + "=" + v
	}
	for _, k := range slices.Sorted(maps.Keys(out.Labels)) {
		if out.Labels[k], err = e.expand("label "+k, out.Labels[k]); err != nil {
			return nil, err
		}
	}
	for _, m := range out.Mounts {
		if !Templated(m.Source) {
			continue
		}
		field := "mount source for " + m.Target
		if m.Source, err = e.expand(field, m.Source); err != nil {
			return nil, err
		}
		// The manager saw an absolute path before expansion; a runtime
		// must see one after it too (docs/design.md §9).
		bind := m.Type == api.MountType_MOUNT_TYPE_UNSPECIFIED || m.Type == api.MountType_MOUNT_TYPE_BIND
		if bind && !path.IsAbs(m.Source) {
			return nil, &Error{field, fmt.Errorf("expands to %q, not an absolute path", m.Source)}
		}
	}
	for _, kind := range []struct {
		name string
		refs []*api.FileReference
	}{{"secret", out.Secrets}, {"config", out.Configs}} {
		for _, ref := range kind.refs {
			if ref.Target, err = e.expand(kind.name+" "+ref.Name+" target", ref.Target); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Sample values Check executes templates with: what an agent could give.
const (
	sampleServiceID = "sampleserviceid"
	sampleNodeID    = "samplenodeid"
	sampleHostname  = "sample-node"
	sampleTaskID    = "sampletaskid"
)

// Check parses and executes every template of spec against a sample
// context, as an agent would expand it, so that a template naming what a
// context lacks ({{.Node.Foo}}, a missing label), of bad syntax, or using
// what is not offered is refused before the spec is stored. The error
// names the field (an *Error).
func Check(spec *api.ServiceSpec) error {
	if !hasTemplates(spec) {
		return nil
	}
	t := &api.Task{Id: sampleTaskID, ServiceId: sampleServiceID, ServiceName: spec.GetName(), NodeId: sampleNodeID, Slot: 1, Spec: spec}
	if spec.GetMode() == api.ServiceMode_SERVICE_MODE_GLOBAL {
		t.Slot = 0
	}
	ctx := NewContext(t, Node{ID: sampleNodeID, Hostname: sampleHostname, Platform: Platform{OS: "linux", Architecture: Architecture("amd64")}})
	_, err := Expand(spec, ctx)
	return err
}
