package spectemplate

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/template/parse"

	"github.com/jaco-project/jaco/api"
)

// Per-slot volumes (docs/adr/0061-volumes.md): a volume mount's source may
// be a template, db-{{.Task.Slot}}, which the manager's scheduler expands
// for each replica before it places it, so that the volume is created on,
// and found again on, the node of the slot's first replica. Its template
// may therefore use only what is known before placement and stays the
// same for every replica of a slot: .Service.ID, .Service.Name,
// .Service.Labels and .Task.Slot. .Node.* would make the volume follow
// the node rather than the data, and .Task.ID or .Task.Name would give
// every restart a fresh, empty volume.

// volumeContext is the data a volume source's template sees: a template
// naming anything else fails to execute, whatever the static check
// below missed ({{with .Task}}{{.ID}}{{end}}).
type volumeContext struct {
	Service Service
	Task    volumeTask
}

type volumeTask struct {
	Slot string
}

// volumeField names a volume source in errors.
const volumeField = "volume source"

// volumeFieldsOffered says what a volume source may use, for errors.
const volumeFieldsOffered = ".Service.ID, .Service.Name, .Service.Labels and .Task.Slot"

// VolumeSource is the volume name source expands to for the replica of
// service svc in slot (its slot number, or for a global service's
// replica its node's id, as in templates elsewhere). The result is
// checked as a volume name. source without a template is returned as
// it is.
func VolumeSource(source string, svc Service, slot string) (string, error) {
	if !Templated(source) {
		return source, nil
	}
	e := newExpander(Context{})
	tmpl, err := e.parseField(volumeField, source)
	if err != nil {
		return "", err
	}
	if tmpl.Tree != nil {
		if err := checkVolumeFields(tmpl.Root); err != nil {
			return "", &Error{volumeField, err}
		}
	}
	var b strings.Builder
	if err := tmpl.Execute(budgetWriter{&b, &e.left}, volumeContext{Service: svc, Task: volumeTask{Slot: slot}}); err != nil {
		if strings.Contains(err.Error(), "can't evaluate field") {
			err = fmt.Errorf("%w (a volume source may use only %s)", err, volumeFieldsOffered)
		}
		return "", &Error{volumeField, err}
	}
	name := b.String()
	if err := api.CheckVolumeName(name); err != nil {
		return "", &Error{volumeField, fmt.Errorf("%q expands to %w", source, err)}
	}
	return name, nil
}

// TaskVolumeSource is the volume name source, a volume mount's, expands
// to for task t: its service's id, name and labels as NewContext takes
// them, and its slot, or for a global replica (slot 0) its node's id. The
// scheduler and the agent both name a replica's volume by it (the agent
// expanding the whole spec with NewContext gets the same), so they agree.
func TaskVolumeSource(t *api.Task, source string) (string, error) {
	if t.GetSlot() == 0 && t.GetNodeId() == "" {
		return "", &Error{volumeField, errors.New("a global replica's volume is its node's, and this replica has no node yet")}
	}
	svc, slot := serviceAndSlot(t, t.GetNodeId())
	return VolumeSource(source, svc, slot)
}

// CheckVolumeSource refuses a volume source template of spec that uses
// what a volume source may not (.Node.*, .Task.ID, .Task.Name), does not
// parse or execute, or does not expand to a volume name for a sample
// replica (its highest slot, the longest, or a node id for a global
// service).
func CheckVolumeSource(spec *api.ServiceSpec, source string) error {
	slot := strconv.FormatUint(max(spec.GetReplicas(), 1), 10)
	if api.PerNode(spec.GetMode()) {
		slot = sampleVolumeNodeID
	}
	_, err := VolumeSource(source, Service{ID: sampleVolumeServiceID, Name: spec.GetName(), Labels: spec.GetLabels()}, slot)
	return err
}

// Sample ids CheckVolumeSource expands with: as long as the ids the
// manager mints (identity.NewID), so that a name too long for them is
// refused before a replica waits on it.
const (
	sampleVolumeServiceID = "sampleserviceidsampleservi"
	sampleVolumeNodeID    = "samplenodeidsamplenodeidsa"
)

// checkVolumeFields refuses, with a message saying why, the fields a
// volume source may not use, wherever they appear: .Node.Hostname,
// $.Task.ID. What it cannot see ((.Task).ID) fails to execute against
// volumeContext.
func checkVolumeFields(n parse.Node) error {
	var err error
	walk(n, func(n parse.Node) {
		if err != nil {
			return
		}
		var idents []string
		switch n := n.(type) {
		case *parse.FieldNode:
			idents = n.Ident
		case *parse.VariableNode:
			if len(n.Ident) > 1 && n.Ident[0] == "$" {
				idents = n.Ident[1:]
			}
		}
		err = volumeFieldAllowed(idents)
	})
	return err
}

func volumeFieldAllowed(idents []string) error {
	if len(idents) == 0 {
		return nil
	}
	field := "." + strings.Join(idents, ".")
	switch {
	case idents[0] == "Node":
		return fmt.Errorf("%s: a volume belongs to its data, not to a node; a volume source may use only %s", field, volumeFieldsOffered)
	case idents[0] == "Task" && len(idents) > 1 && (idents[1] == "ID" || idents[1] == "Name"):
		return fmt.Errorf("%s: it differs with every replica of a slot, so each restart would get a fresh, empty volume; a volume source may use only %s",
			field, volumeFieldsOffered)
	}
	return nil
}

// walk calls fn on n and every node under it.
func walk(n parse.Node, fn func(parse.Node)) {
	if n == nil {
		return
	}
	fn(n)
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			walk(c, fn)
		}
	case *parse.ActionNode:
		walk(n.Pipe, fn)
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for _, c := range n.Cmds {
			walk(c, fn)
		}
	case *parse.CommandNode:
		for _, a := range n.Args {
			walk(a, fn)
		}
	case *parse.IfNode:
		walkBranch(&n.BranchNode, fn)
	case *parse.WithNode:
		walkBranch(&n.BranchNode, fn)
	case *parse.ChainNode:
		walk(n.Node, fn)
	}
}

func walkBranch(b *parse.BranchNode, fn func(parse.Node)) {
	walk(b.Pipe, fn)
	if b.List != nil {
		walk(b.List, fn)
	}
	if b.ElseList != nil {
		walk(b.ElseList, fn)
	}
}
