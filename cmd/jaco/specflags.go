package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/procopts"
)

// specFlags are the service spec flags of `service create` and `service
// update`. Update applies only the flags given; create starts from an
// empty spec.
type specFlags struct {
	replicas                       uint64
	mode, bundle                   string
	env, publish                   []string
	mounts                         mountsValue
	constraints, spread, dependsOn []string
	pin                            string
	limitCPU, reserveCPU           float64
	limitMemory, reserveMemory     sizeValue
	restartCondition               string
	restartDelay, restartWindow    time.Duration
	restartMaxAttempts             uint64
	healthCmd, healthHTTP          string
	healthTCP                      uint32
	healthInterval, healthTimeout  time.Duration
	healthStartPeriod              time.Duration
	healthRetries                  uint32
	healthNotify                   bool
	stopGrace, abortGrace          time.Duration
	prepareStartLimit              uint32
	networkOpen                    bool
	allowFrom                      []string
	networks                       []string
	endpointMode                   string
	secrets, configs               []string
	update, rollback               policyFlags
	proc                           procFlags
	job                            jobFlags
	volumeMove                     string
}

func (f *specFlags) register(fs *pflag.FlagSet) {
	fs.Uint64Var(&f.replicas, "replicas", 1, "number of replicas (replicated mode)")
	// Values are checked as parsed: on update the spec is changed only
	// after the service was read from the daemon, and a bad value must
	// still be a usage error (exit 2).
	f.mode = "replicated"
	fs.Var(&checkedString{&f.mode, oneOf(modeWords...)}, "mode",
		"replicated, global (one replica per eligible node), replicated-job (--replicas completions) or global-job (one completion per eligible node)")
	fs.StringVar(&f.bundle, "bundle", "", "hook bundle directory (prepare, launch, finish, cleanup) instead of an image")
	fs.StringArrayVarP(&f.env, "env", "e", nil, "KEY=VALUE for the replicas' environment (repeatable)")
	fs.Var(&f.mounts, "mount", mountHelp)
	fs.VarP(&checkedList{&f.publish, func(s string) error { _, err := parsePublish(s); return err }},
		"publish", "p", publishHelp)
	fs.StringArrayVar(&f.constraints, "constraint", nil, "placement constraint such as node.labels.zone==a (repeatable)")
	fs.Var(&checkedList{&f.spread, func(s string) error { _, err := parseSpread(s); return err }},
		"placement-pref", "spread=node.labels.KEY: spread replicas over the label's values (repeatable)")
	fs.StringVar(&f.pin, "pin", "", "place every replica on this node (id or hostname)")
	fs.StringArrayVar(&f.dependsOn, "depends-on", nil, "service that needs a healthy replica before this one starts (repeatable)")
	fs.Float64Var(&f.limitCPU, "limit-cpu", 0, "CPU limit per replica, in cores")
	fs.Var(&f.limitMemory, "limit-memory", "memory limit per replica, as docker reads it (e.g. 512m, 64MB, 1.5G)")
	fs.Float64Var(&f.reserveCPU, "reserve-cpu", 0, "CPU set aside per replica by the scheduler, in cores")
	fs.Var(&f.reserveMemory, "reserve-memory", "memory set aside per replica by the scheduler (e.g. 64MB)")
	f.restartCondition = "any"
	fs.Var(&checkedString{&f.restartCondition, oneOf("any", "on-failure", "none")}, "restart-condition", "restart ended replicas: any, on-failure or none")
	fs.DurationVar(&f.restartDelay, "restart-delay", 5*time.Second, "wait before a replacement starts")
	fs.Uint64Var(&f.restartMaxAttempts, "restart-max-attempts", 0, "restarts allowed within the window (0: unlimited)")
	fs.DurationVar(&f.restartWindow, "restart-window", 0, "window the attempts are counted in (0: forever)")
	fs.StringVar(&f.healthCmd, "health-cmd", "", "health check command run in the replica (exit 0 is healthy)")
	fs.Var(&checkedString{&f.healthHTTP, func(s string) error { _, err := parseHealthHTTP(s); return err }},
		"health-http", "health check PORT[/path]: an HTTP GET answered 2xx/3xx is healthy")
	fs.Uint32Var(&f.healthTCP, "health-tcp", 0, "health check port: an open TCP connection is healthy")
	fs.BoolVar(&f.healthNotify, "health-notify", false, "hook bundles: launch says READY=1, then WATCHDOG=1 at least every --health-interval,\n"+
		"on the socket in $JACO_NOTIFY_SOCKET (sd_notify's, also in $NOTIFY_SOCKET); --health-retries silent intervals in a row are\n"+
		"unhealthy, --health-start-period bounds the wait for READY=1 (0: none), STATUS=text is the replica's status message")
	// Docker's defaults, as the agent's for a spec without them
	// (docs/adr/0059-process-and-container-options.md).
	fs.DurationVar(&f.healthInterval, "health-interval", 30*time.Second, "time between health checks")
	fs.DurationVar(&f.healthTimeout, "health-timeout", 30*time.Second, "time a health check may take")
	fs.Uint32Var(&f.healthRetries, "health-retries", 3, "failed checks in a row that make a replica unhealthy")
	fs.DurationVar(&f.healthStartPeriod, "health-start-period", 0, "failures during this time after start do not count")
	fs.DurationVar(&f.stopGrace, "stop-grace-period", 2*time.Minute, "after SIGINT, wait this long before SIGQUIT")
	fs.DurationVar(&f.abortGrace, "abort-grace-period", 30*time.Second, "after SIGQUIT, wait this long before SIGKILL")
	fs.Uint32Var(&f.prepareStartLimit, "prepare-start-limit", 10, "attempts of the prepare hook")
	fs.BoolVar(&f.networkOpen, "network-open", false, "let replicas of every service reach this one (default: its own and its dependents')")
	fs.StringArrayVar(&f.allowFrom, "allow-from", nil, "another service whose replicas may reach this one (repeatable)")
	fs.StringArrayVar(&f.networks, "network", nil, "overlay network the replicas attach to (repeatable; on update the list replaces the service's)")
	f.endpointMode = "vip"
	fs.Var(&checkedString{&f.endpointMode, oneOf("vip", "dnsrr")}, "endpoint-mode",
		"how the service is found on its networks: vip (one virtual IP per network) or dnsrr (DNS round robin over its replicas)")
	fs.Var(&checkedList{&f.secrets, checkFileRef}, "secret",
		"secret the replicas get as /run/secrets/TARGET, in memory: NAME[,target=T,mode=0444,uid=0,gid=0] (repeatable; on update the list replaces the service's)")
	fs.Var(&checkedList{&f.configs, checkFileRef}, "config",
		"config the replicas get as a file: NAME[,target=/PATH,mode=0444,uid=0,gid=0] (target default /NAME; repeatable; on update the list replaces the service's)")
	f.volumeMove = "pin"
	fs.Var(&checkedString{&f.volumeMove, oneOf("pin", "move")}, "volume-move",
		"a replica whose named volume lives on a node it must leave (drained, or excluded by --constraint): pin (wait for that node) or move (stop it, copy the volume to its new node, start it there; docs/adr/0064-volume-move.md)")
	f.proc.register(fs)
	f.job.register(fs)
	f.update.register(fs, "update")
	f.rollback.register(fs, "rollback")
}

// apply writes the flags into spec: every flag on create (all), the
// changed ones on update.
func (f *specFlags) apply(cmd *cobra.Command, spec *api.ServiceSpec, all bool) error {
	set := func(name string) bool { return all || cmd.Flags().Changed(name) }
	if set("replicas") {
		spec.Replicas = f.replicas
	}
	if err := f.job.applyMode(cmd, set, f.mode, spec); err != nil { // jobflags.go
		return err
	}
	if set("volume-move") {
		spec.VolumeMove = api.VolumeMovePolicy_VOLUME_MOVE_POLICY_PIN
		if f.volumeMove == "move" {
			spec.VolumeMove = api.VolumeMovePolicy_VOLUME_MOVE_POLICY_MOVE
		}
	}
	if set("bundle") && f.bundle != "" {
		b, err := readBundle(f.bundle)
		if err != nil {
			return err
		}
		spec.Bundle, spec.Image = b, ""
	}
	if spec.Bundle != nil && set("prepare-start-limit") {
		spec.Bundle.PrepareStartLimit = f.prepareStartLimit
	}
	if set("env") {
		spec.Env = f.env
	}
	if set("mount") {
		spec.Mounts = f.mounts.mounts
	}
	if set("network") {
		spec.Networks = f.networks
	}
	if set("endpoint-mode") {
		spec.EndpointMode = endpointModes[f.endpointMode]
	}
	if set("secret") {
		refs, err := parseFileRefs("secret", f.secrets)
		if err != nil {
			return err
		}
		spec.Secrets = refs
	}
	if set("config") {
		refs, err := parseFileRefs("config", f.configs)
		if err != nil {
			return err
		}
		spec.Configs = refs
	}
	if set("publish") {
		spec.Ports = nil
		for _, p := range f.publish {
			port, err := parsePublish(p)
			if err != nil {
				return fmt.Errorf("--publish %q: %w", p, err)
			}
			spec.Ports = append(spec.Ports, port)
		}
	}
	if err := f.applyPlacement(set, spec); err != nil {
		return err
	}
	if err := f.applyResources(set, spec); err != nil {
		return err
	}
	if err := f.applyRestart(set, spec); err != nil {
		return err
	}
	if err := f.applyHealth(set, cmd.Flags().Changed, spec); err != nil {
		return err
	}
	if set("network-open") || set("allow-from") {
		if spec.Network == nil {
			spec.Network = &api.NetworkAccess{}
		}
		if set("network-open") {
			spec.Network.Open = f.networkOpen
		}
		if set("allow-from") {
			spec.Network.AllowFrom = f.allowFrom
		}
	}
	// Only the flags given, on create too: a nil policy means the defaults.
	spec.Update = f.update.apply(cmd.Flags(), spec.Update)
	spec.Rollback = f.rollback.apply(cmd.Flags(), spec.Rollback)
	f.proc.apply(set, spec)
	// A create is refused here rather than by the manager (invalid_spec)
	// so the operator hears it before any request; an update is left to
	// the manager, which knows what a stored bundle may keep
	// (docs/adr/0059-process-and-container-options.md).
	if all && spec.Bundle != nil {
		if opts := procopts.ContainerOnly(spec); len(opts) > 0 {
			return fmt.Errorf("--bundle: a hook bundle runs on the node's own file system and host name; %s apply to containers only",
				strings.Join(opts, ", "))
		}
	}
	if set("stop-grace-period") {
		spec.StopGracePeriod = durationpb.New(f.stopGrace)
	}
	if set("abort-grace-period") {
		spec.AbortGracePeriod = durationpb.New(f.abortGrace)
	}
	return nil
}

func (f *specFlags) applyPlacement(set func(string) bool, spec *api.ServiceSpec) error {
	if spec.Placement == nil {
		spec.Placement = &api.Placement{}
	}
	if set("constraint") {
		spec.Placement.Constraints = f.constraints
	}
	if set("placement-pref") {
		spec.Placement.Spread = nil
		for _, p := range f.spread {
			attr, err := parseSpread(p)
			if err != nil {
				return fmt.Errorf("--placement-pref %q: %w", p, err)
			}
			spec.Placement.Spread = append(spec.Placement.Spread, attr)
		}
	}
	if set("pin") {
		spec.Placement.PinNode = f.pin
	}
	if set("depends-on") {
		spec.DependsOn = f.dependsOn
	}
	return nil
}

func (f *specFlags) applyResources(set func(string) bool, spec *api.ServiceSpec) error {
	var err error
	spec.Limits, err = resources(spec.Limits, set("limit-cpu"), f.limitCPU, set("limit-memory"), f.limitMemory)
	if err != nil {
		return fmt.Errorf("limits: %w", err)
	}
	spec.Reservations, err = resources(spec.Reservations, set("reserve-cpu"), f.reserveCPU, set("reserve-memory"), f.reserveMemory)
	if err != nil {
		return fmt.Errorf("reservations: %w", err)
	}
	return nil
}

func resources(r *api.Resources, setCPU bool, cpu float64, setMem bool, mem sizeValue) (*api.Resources, error) {
	if r == nil {
		r = &api.Resources{}
	}
	if setCPU {
		r.NanoCpus = int64(cpu * 1e9)
	}
	if setMem && mem.text != "" {
		r.MemoryBytes = mem.bytes
	}
	if r.NanoCpus == 0 && r.MemoryBytes == 0 {
		return nil, nil
	}
	return r, nil
}

func (f *specFlags) applyRestart(set func(string) bool, spec *api.ServiceSpec) error {
	if spec.Restart == nil {
		spec.Restart = &api.RestartPolicy{}
	}
	if set("restart-condition") {
		c, ok := map[string]api.RestartCondition{
			"any": api.RestartCondition_RESTART_CONDITION_ANY, "on-failure": api.RestartCondition_RESTART_CONDITION_ON_FAILURE,
			"none": api.RestartCondition_RESTART_CONDITION_NONE,
		}[f.restartCondition]
		if !ok {
			return fmt.Errorf("--restart-condition must be any, on-failure or none, not %q", f.restartCondition)
		}
		spec.Restart.Condition = c
	}
	if set("restart-delay") {
		spec.Restart.Delay = durationpb.New(f.restartDelay)
	}
	if set("restart-max-attempts") {
		spec.Restart.MaxAttempts = f.restartMaxAttempts
	}
	if set("restart-window") {
		spec.Restart.Window = durationpb.New(f.restartWindow)
	}
	return nil
}

// applyHealth sets the health check; changed tells the flags given, where
// set also holds every flag on create.
func (f *specFlags) applyHealth(set, changed func(string) bool, spec *api.ServiceSpec) error {
	h := spec.Health
	if h == nil {
		h = &api.HealthCheck{}
	}
	notify := changed("health-notify") && f.healthNotify
	if notify {
		if err := f.checkNotify(changed, spec); err != nil {
			return err
		}
	}
	switch {
	case notify:
		h.Test = &api.HealthCheck_Notify{Notify: &api.NotifyCheck{}}
		h.Timeout = nil // a notify check has none
	case set("health-cmd") && f.healthCmd != "":
		h.Test = &api.HealthCheck_Command{Command: &api.CommandCheck{Argv: []string{"/bin/sh", "-c", f.healthCmd}}}
	case set("health-http") && f.healthHTTP != "":
		check, err := parseHealthHTTP(f.healthHTTP)
		if err != nil {
			return fmt.Errorf("--health-http %q: %w", f.healthHTTP, err)
		}
		h.Test = &api.HealthCheck_Http{Http: check}
	case set("health-tcp") && f.healthTCP != 0:
		h.Test = &api.HealthCheck_Tcp{Tcp: &api.TCPCheck{Port: f.healthTCP}}
	}
	if h.Test == nil {
		return nil
	}
	if set("health-interval") {
		h.Interval = durationpb.New(f.healthInterval)
	}
	if set("health-timeout") && h.GetNotify() == nil {
		h.Timeout = durationpb.New(f.healthTimeout)
	}
	if set("health-retries") {
		h.Retries = f.healthRetries
	}
	if set("health-start-period") {
		h.StartPeriod = durationpb.New(f.healthStartPeriod)
	}
	spec.Health = h
	return nil
}

// checkNotify refuses --health-notify beside another test or a timeout,
// and for an image: the notify socket is the hooks runtime's.
func (f *specFlags) checkNotify(changed func(string) bool, spec *api.ServiceSpec) error {
	for _, other := range []string{"health-cmd", "health-http", "health-tcp", "health-timeout"} {
		if changed(other) {
			return fmt.Errorf("--health-notify cannot be combined with --%s: the replica reports itself, every --health-interval", other)
		}
	}
	if spec.Bundle == nil {
		return fmt.Errorf("--health-notify is for hook bundles (--bundle DIR): an image has no notify socket")
	}
	return nil
}

func parseSpread(s string) (string, error) {
	attr, ok := strings.CutPrefix(s, "spread=")
	if !ok || attr == "" {
		return "", fmt.Errorf("want spread=node.labels.KEY")
	}
	return attr, nil
}

// parseHealthHTTP reads PORT[/path]; "" is no HTTP check.
func parseHealthHTTP(s string) (*api.HTTPCheck, error) {
	if s == "" {
		return nil, nil
	}
	portText, path, _ := strings.Cut(s, "/")
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || port == 0 {
		return nil, fmt.Errorf("want PORT[/path], the port 1 to 65535")
	}
	return &api.HTTPCheck{Port: uint32(port), Path: "/" + path}, nil
}

// readBundle reads a hook bundle directory: its regular files, by name.
// A directory it cannot read is a failure (exit 1), not a usage mistake:
// the command was right, the file system was not.
func readBundle(dir string) (*api.HookBundle, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, failure{fmt.Errorf("hook bundle: %w", err)}
	}
	b := &api.HookBundle{Files: map[string][]byte{}}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, failure{fmt.Errorf("hook bundle: %w", err)}
		}
		b.Files[e.Name()] = data
	}
	return b, nil
}
