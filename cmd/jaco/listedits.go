package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jaco-project/jaco/api"
)

// listEdits are update's --X-add and --X-rm flags (Docker's): they change
// one entry of a spec list and keep the others, where --X replaces the
// whole list.
type listEdits struct {
	envAdd, envRm               []string
	networkAdd, networkRm       []string
	constraintAdd, constraintRm []string
	publishAdd, publishRm       []string
	secretAdd, secretRm         []string
	configAdd, configRm         []string
}

func (e *listEdits) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&e.envAdd, "env-add", nil, "add or change KEY=VALUE in the environment, keeping the rest (repeatable)")
	fs.StringArrayVar(&e.envRm, "env-rm", nil, "remove KEY from the environment (repeatable)")
	fs.StringArrayVar(&e.networkAdd, "network-add", nil, "attach to another overlay network (repeatable)")
	fs.StringArrayVar(&e.networkRm, "network-rm", nil, "detach from an overlay network (repeatable)")
	fs.StringArrayVar(&e.constraintAdd, "constraint-add", nil, "add a placement constraint (repeatable)")
	fs.StringArrayVar(&e.constraintRm, "constraint-rm", nil, "remove a placement constraint, written as it was added (repeatable)")
	fs.VarP(&checkedList{&e.publishAdd, func(s string) error { _, err := parsePublish(s); return err }},
		"publish-add", "", "publish another port, as -p takes it (repeatable); it replaces one with the same published port and protocol")
	fs.Var(&checkedList{&e.publishRm, func(s string) error { _, _, err := parsePublishedPort(s); return err }},
		"publish-rm", "stop publishing PUBLISHED[/udp], whatever its mode (repeatable)")
	fs.Var(&checkedList{&e.secretAdd, checkFileRef}, "secret-add",
		"give the replicas another secret, as --secret takes it (repeatable); it replaces one at the same target")
	fs.StringArrayVar(&e.secretRm, "secret-rm", nil, "take a secret away, by name (repeatable)")
	fs.Var(&checkedList{&e.configAdd, checkFileRef}, "config-add",
		"give the replicas another config, as --config takes it (repeatable); it replaces one at the same target")
	fs.StringArrayVar(&e.configRm, "config-rm", nil, "take a config away, by name (repeatable)")
}

// check refuses an edit beside the flag that replaces the same list: one
// would silently undo the other.
func (e *listEdits) check(cmd *cobra.Command) error {
	for list, edits := range map[string][]string{
		"env": {"env-add", "env-rm"}, "network": {"network-add", "network-rm"},
		"constraint": {"constraint-add", "constraint-rm"}, "publish": {"publish-add", "publish-rm"},
		"secret": {"secret-add", "secret-rm"}, "config": {"config-add", "config-rm"},
	} {
		for _, edit := range edits {
			if cmd.Flags().Changed(list) && cmd.Flags().Changed(edit) {
				return fmt.Errorf("--%s replaces the whole list and --%s edits it: give one", list, edit)
			}
		}
	}
	return nil
}

// apply edits spec's lists: removals first, then additions.
func (e *listEdits) apply(spec *api.ServiceSpec) error {
	spec.Env = slices.DeleteFunc(spec.Env, func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(e.envRm, k) || slices.ContainsFunc(e.envAdd, func(add string) bool {
			ak, _, _ := strings.Cut(add, "=")
			return ak == k
		})
	})
	spec.Env = append(spec.Env, e.envAdd...)

	spec.Networks = slices.DeleteFunc(spec.Networks, func(n string) bool { return slices.Contains(e.networkRm, n) })
	for _, n := range e.networkAdd {
		if !slices.Contains(spec.Networks, n) {
			spec.Networks = append(spec.Networks, n)
		}
	}

	if len(e.constraintAdd)+len(e.constraintRm) > 0 {
		if spec.Placement == nil {
			spec.Placement = &api.Placement{}
		}
		cs := slices.DeleteFunc(spec.Placement.Constraints, func(c string) bool { return slices.Contains(e.constraintRm, c) })
		for _, c := range e.constraintAdd {
			if !slices.Contains(cs, c) {
				cs = append(cs, c)
			}
		}
		spec.Placement.Constraints = cs
	}

	for _, p := range e.publishRm {
		port, proto, _ := parsePublishedPort(p)
		spec.Ports = slices.DeleteFunc(spec.Ports, func(pc *api.PortConfig) bool {
			return pc.GetPublishedPort() == port && protocolOf(pc) == proto
		})
	}
	for _, p := range e.publishAdd {
		pc, err := parsePublish(p)
		if err != nil {
			return fmt.Errorf("--publish-add %q: %w", p, err)
		}
		spec.Ports = slices.DeleteFunc(spec.Ports, func(old *api.PortConfig) bool {
			return old.GetPublishedPort() == pc.GetPublishedPort() && protocolOf(old) == protocolOf(pc)
		})
		spec.Ports = append(spec.Ports, pc)
	}

	if len(e.secretAdd)+len(e.secretRm) > 0 {
		refs, err := editFileRefs(spec.Secrets, e.secretRm, e.secretAdd, "secret-add", secretTarget)
		if err != nil {
			return err
		}
		spec.Secrets = refs
	}
	if len(e.configAdd)+len(e.configRm) > 0 {
		refs, err := editFileRefs(spec.Configs, e.configRm, e.configAdd, "config-add", configTarget)
		if err != nil {
			return err
		}
		spec.Configs = refs
	}
	return nil
}

// parsePublishedPort reads PUBLISHED[/udp] as --publish-rm takes it.
func parsePublishedPort(s string) (uint32, string, error) {
	port, proto, _ := strings.Cut(s, "/")
	if proto == "" {
		proto = "tcp"
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 || (proto != "tcp" && proto != "udp") {
		return 0, "", fmt.Errorf("want PUBLISHED[/udp], a port from 1 to 65535")
	}
	return uint32(n), proto, nil
}

func protocolOf(p *api.PortConfig) string {
	if p.GetProtocol() == "" {
		return "tcp"
	}
	return strings.ToLower(p.GetProtocol())
}
