package compose

import (
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/tree"
)

// supported lists the compose keys jaco honours (tree.Path patterns, * a
// name, [] a list item). compose-go reports every key of the loaded model
// that matches none of them, so a key the specification gains later is
// refused until it is wired in here and in the translation (compose.go,
// service.go, process.go, deploy.go): the screening fails closed.
var supported = paths(
	"name", "version",
	"services.*",
	"services.*.image",
	"services.*.command",
	"services.*.entrypoint",
	"services.*.environment", "services.*.environment.*",
	"services.*.env_file", "services.*.env_file.[].path", "services.*.env_file.[].required",
	"services.*.labels", "services.*.labels.*",
	"services.*.profiles",
	"services.*.restart",
	"services.*.stop_grace_period",
	"services.*.ports",
	"services.*.ports.[].target", "services.*.ports.[].published",
	"services.*.ports.[].protocol", "services.*.ports.[].mode",
	"services.*.healthcheck",
	"services.*.healthcheck.test", "services.*.healthcheck.interval", "services.*.healthcheck.timeout",
	"services.*.healthcheck.retries", "services.*.healthcheck.start_period", "services.*.healthcheck.disable",
	// compose-go writes required (true) itself into the long form of a
	// short-syntax depends_on; translate.go refuses required: false.
	"services.*.depends_on", "services.*.depends_on.*", "services.*.depends_on.*.condition",
	"services.*.depends_on.*.required",
	"services.*.networks", "services.*.networks.*",
	"services.*.secrets",
	"services.*.secrets.[].source", "services.*.secrets.[].target", "services.*.secrets.[].uid",
	"services.*.secrets.[].gid", "services.*.secrets.[].mode",
	"services.*.configs",
	"services.*.configs.[].source", "services.*.configs.[].target", "services.*.configs.[].uid",
	"services.*.configs.[].gid", "services.*.configs.[].mode",
	"services.*.volumes",
	"services.*.volumes.[].type", "services.*.volumes.[].source", "services.*.volumes.[].target",
	"services.*.volumes.[].read_only",
	// compose-go expands a short-syntax volume with these; service.go
	// refuses every type but bind, tmpfs and volume.
	"services.*.volumes.[].bind", "services.*.volumes.[].bind.create_host_path",
	"services.*.volumes.[].volume", "services.*.volumes.[].volume.nocopy",
	"services.*.volumes.[].tmpfs", "services.*.volumes.[].tmpfs.size", "services.*.volumes.[].tmpfs.mode",
	"services.*.tmpfs",
	// Process and container options (process.go).
	"services.*.user", "services.*.group_add", "services.*.working_dir", "services.*.hostname",
	"services.*.cap_add", "services.*.cap_drop",
	"services.*.sysctls", "services.*.sysctls.*",
	"services.*.ulimits", "services.*.ulimits.*", "services.*.ulimits.*.soft", "services.*.ulimits.*.hard",
	"services.*.stop_signal", "services.*.init", "services.*.read_only",
	"services.*.extra_hosts", "services.*.extra_hosts.*",
	"services.*.dns", "services.*.dns_search", "services.*.dns_opt", "services.*.shm_size",
	// Meaningless in a cluster: accepted with a warning (process.go).
	// build is left out on purpose: Load hands it to the translation,
	// which warns beside an image and refuses without one.
	"services.*.container_name", "services.*.expose", "services.*.links",
	"services.*.deploy",
	"services.*.deploy.mode", "services.*.deploy.replicas", "services.*.deploy.endpoint_mode",
	"services.*.deploy.labels", "services.*.deploy.labels.*",
	"services.*.deploy.placement",
	"services.*.deploy.placement.constraints", "services.*.deploy.placement.preferences",
	"services.*.deploy.placement.preferences.[].spread",
	"services.*.deploy.resources",
	"services.*.deploy.resources.limits",
	"services.*.deploy.resources.limits.cpus", "services.*.deploy.resources.limits.memory",
	"services.*.deploy.resources.reservations",
	"services.*.deploy.resources.reservations.cpus", "services.*.deploy.resources.reservations.memory",
	"services.*.deploy.restart_policy",
	"services.*.deploy.restart_policy.condition", "services.*.deploy.restart_policy.delay",
	"services.*.deploy.restart_policy.max_attempts", "services.*.deploy.restart_policy.window",
	"services.*.deploy.update_config", "services.*.deploy.rollback_config",
	"networks.*",
	"networks.*.external", "networks.*.name", "networks.*.driver",
	// compose.go says what each means to a jaco network.
	"networks.*.attachable", "networks.*.internal", "networks.*.driver_opts", "networks.*.driver_opts.encrypted",
	"networks.*.ipam", "networks.*.ipam.config", "networks.*.ipam.config.[].subnet",
	"secrets.*", "secrets.*.file", "secrets.*.external", "secrets.*.name",
	"configs.*", "configs.*.file", "configs.*.external", "configs.*.name",
	// Named volumes (volumes.go): the local driver's options only.
	"volumes.*", "volumes.*.driver", "volumes.*.external", "volumes.*.name",
	"volumes.*.driver_opts", "volumes.*.driver_opts.type", "volumes.*.driver_opts.device", "volumes.*.driver_opts.o",
	"volumes.*.labels", "volumes.*.labels.*",
)

func init() {
	for _, policy := range []string{"update_config", "rollback_config"} {
		for _, k := range []string{"parallelism", "delay", "failure_action", "monitor", "max_failure_ratio", "order"} {
			supported = append(supported, tree.Path("services.*.deploy."+policy+"."+k))
		}
	}
}

func paths(ps ...string) []tree.Path {
	out := make([]tree.Path, len(ps))
	for i, p := range ps {
		out[i] = tree.Path(p)
	}
	return out
}

// keyName renders a reported path as an operator reads it: list items
// (compose-go's "[]") are dropped, so services.web.ports.[].host_ip reads
// services.web.ports.host_ip, and the dots of a key are dots again.
func keyName(p tree.Path) string {
	parts := slices.DeleteFunc(pathParts(p), func(s string) bool { return s == tree.PathMatchList })
	return strings.Join(parts, ".")
}

// pathParts splits a reported path into its keys. compose-go writes a dot
// inside a key (com.docker.network.driver.mtu) as a ghost emoji so the
// path still splits on dots (tree.Path.Next); each key gets its dots back.
func pathParts(p tree.Path) []string {
	parts := p.Parts()
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(s, "\U0001F47B", ".")
	}
	return parts
}
