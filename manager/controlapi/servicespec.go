package controlapi

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/api/rollout"
	"github.com/jaco-project/jaco/api/spectemplate"
	"github.com/jaco-project/jaco/manager/placement"
	"github.com/jaco-project/jaco/manager/state/store"
)

// maxBundleBytes bounds a hook bundle: it travels in raft entries and to
// every node that runs the service.
const maxBundleBytes = 1 << 20

// maxSpecBytes bounds a whole service spec, encoded: a full hook bundle
// and as much again for the rest. A service, and a task holding a copy of
// its spec, then stays far below gRPC's 4 MiB message limit, so any one
// object can be read and every page of a listing sent
// (docs/adr/0019-list-paging.md). Bounds on single fields are checked
// beside it.
const maxSpecBytes = 2 * maxBundleBytes

var (
	serviceName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)
)

// validateSpec refuses a spec no replica could run, before anything is
// written. It checks the spec alone; references to other objects are
// checkReferences' job.
func validateSpec(spec *api.ServiceSpec) error {
	if spec == nil {
		return invalid("no service spec")
	}
	// First, and without quoting the spec: a name may be what is too big.
	if n := proto.Size(spec); n > maxSpecBytes {
		return invalid("the service spec encodes to %d bytes; the limit is %d", n, maxSpecBytes)
	}
	if err := checkSpecLists(spec); err != nil {
		return err
	}
	if err := checkName("service", spec.Name); err != nil {
		return err
	}
	switch {
	case spec.Image == "" && spec.Bundle == nil:
		return invalid("service %s has neither an image nor a hook bundle", spec.Name)
	case spec.Image != "" && spec.Bundle != nil:
		return invalid("service %s has both an image and a hook bundle; choose one", spec.Name)
	}
	if err := validateBundle(spec.Bundle); err != nil {
		return err
	}
	if err := validateJob(spec); err != nil { // jobspec.go
		return err
	}
	if spec.Mode == api.ServiceMode_SERVICE_MODE_GLOBAL && spec.Replicas != 0 {
		return invalid("a global service runs one replica per node; --replicas does not apply")
	}
	if _, ok := api.EndpointMode_name[int32(spec.EndpointMode)]; !ok {
		return invalid("endpoint_mode %d: want vip or dnsrr", spec.EndpointMode)
	}
	if _, ok := api.VolumeMovePolicy_name[int32(spec.VolumeMove)]; !ok {
		return invalid("volume_move %d: want pin or move", spec.VolumeMove)
	}
	for _, e := range spec.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return invalid("environment entry %q is not KEY=VALUE", e)
		}
	}
	for _, r := range []*api.Resources{spec.Limits, spec.Reservations} {
		if r.GetNanoCpus() < 0 || r.GetMemoryBytes() < 0 {
			return invalid("resources cannot be negative")
		}
	}
	if err := validateMounts(spec); err != nil {
		return err
	}
	if err := validateProcess(spec); err != nil {
		return err
	}
	if err := validatePorts(spec.Ports); err != nil {
		return err
	}
	if err := validateIngress(spec); err != nil {
		return err
	}
	if slices.Contains(spec.DependsOn, spec.Name) {
		return invalid("service %s cannot depend on itself", spec.Name)
	}
	if err := validateDurations(spec); err != nil {
		return err
	}
	if err := validatePolicy("update", spec.Update); err != nil {
		return err
	}
	if spec.GetRollback().GetFailureAction() == api.UpdateFailureAction_UPDATE_FAILURE_ACTION_ROLLBACK {
		return invalid("rollback.failure_action rollback: a rollback cannot roll back; want pause or continue")
	}
	if err := validatePolicy("rollback", spec.Rollback); err != nil {
		return err
	}
	if err := placement.Validate(spec.Placement); err != nil {
		return invalid("service %s: %v", spec.Name, err)
	}
	if err := fillFileRefs(spec); err != nil {
		return err
	}
	if err := spectemplate.Check(spec); err != nil {
		return invalid("service %s: %v", spec.Name, err)
	}
	return validateHealth(spec)
}

func validateBundle(b *api.HookBundle) error {
	if b == nil {
		return nil
	}
	if err := api.CheckHookFiles(b.Files); err != nil {
		return invalid("%v", err)
	}
	size := 0
	for _, data := range b.Files {
		size += len(data)
	}
	if size > maxBundleBytes {
		return invalid("the hook bundle holds %d bytes; the limit is %d", size, maxBundleBytes)
	}
	return nil
}

func validatePorts(ports []*api.PortConfig) error {
	published := map[string]bool{}
	for _, p := range ports {
		proto := p.Protocol
		if proto == "" {
			proto = "tcp"
		}
		if proto != "tcp" && proto != "udp" {
			return invalid("port protocol %q: use tcp or udp", p.Protocol)
		}
		if _, ok := api.PublishMode_name[int32(p.PublishMode)]; !ok {
			return invalid("port publish_mode %d: want ingress or host", p.PublishMode)
		}
		if p.TargetPort == 0 || p.TargetPort > 65535 || p.PublishedPort > 65535 {
			return invalid("port %d:%d is out of range", p.PublishedPort, p.TargetPort)
		}
		if p.PublishedPort == 0 {
			continue
		}
		key := fmt.Sprintf("%d/%s", p.PublishedPort, proto)
		if published[key] {
			return invalid("port %s is published twice", key)
		}
		published[key] = true
	}
	return nil
}

func validateDurations(spec *api.ServiceSpec) error {
	for name, d := range map[string]durationLike{
		"restart delay":       spec.GetRestart().GetDelay(),
		"restart window":      spec.GetRestart().GetWindow(),
		"stop grace period":   spec.GetStopGracePeriod(),
		"abort grace period":  spec.GetAbortGracePeriod(),
		"health interval":     spec.GetHealth().GetInterval(),
		"health timeout":      spec.GetHealth().GetTimeout(),
		"health start period": spec.GetHealth().GetStartPeriod(),
	} {
		if d.AsDuration() < 0 { // nil-safe: an unset duration is 0
			return invalid("%s cannot be negative", name)
		}
	}
	return nil
}

// validatePolicy checks an update or rollback policy (which names it); nil
// is the defaults.
func validatePolicy(which string, p *api.UpdatePolicy) error {
	if p == nil {
		return nil
	}
	if r := p.MaxFailureRatio; math.IsNaN(r) || r < 0 || r > 1 {
		return invalid("%s.max_failure_ratio %v: want 0 to 1", which, r)
	}
	for _, f := range []struct {
		name string
		d    durationLike
	}{{"delay", p.Delay}, {"monitor", p.Monitor}} {
		if v := f.d.AsDuration(); v < 0 || v > rollout.MaxPolicyDuration {
			return invalid("%s.%s %v: want 0s to %v", which, f.name, v, rollout.MaxPolicyDuration)
		}
	}
	if _, ok := api.UpdateOrder_name[int32(p.Order)]; !ok {
		return invalid("%s.order %d: want stop-first or start-first", which, p.Order)
	}
	if _, ok := api.UpdateFailureAction_name[int32(p.FailureAction)]; !ok {
		return invalid("%s.failure_action %d: want pause, continue or rollback", which, p.FailureAction)
	}
	return nil
}

// durationLike is a *durationpb.Duration, which may be nil (AsDuration is
// nil-safe).
type durationLike interface{ AsDuration() time.Duration }

func validateHealth(spec *api.ServiceSpec) error {
	h := spec.Health
	if h == nil {
		return nil
	}
	switch t := h.Test.(type) {
	case nil:
		return invalid("a health check needs a command, an HTTP, a TCP or a notify test")
	case *api.HealthCheck_Notify:
		// The notify socket is the hooks runtime's; the interval is the
		// watchdog period launch promises, which has no sane default.
		if spec.Bundle == nil {
			return invalid("a notify health check is for hook bundles only")
		}
		if h.GetInterval().AsDuration() <= 0 {
			return invalid("a notify health check needs an interval (the WATCHDOG=1 period) above 0")
		}
	case *api.HealthCheck_Command:
		if len(t.Command.Argv) == 0 {
			return invalid("a command health check needs a command")
		}
	case *api.HealthCheck_Http:
		if t.Http.Port == 0 || t.Http.Port > 65535 {
			return invalid("HTTP health check port %d is out of range", t.Http.Port)
		}
	case *api.HealthCheck_Tcp:
		if t.Tcp.Port == 0 || t.Tcp.Port > 65535 {
			return invalid("TCP health check port %d is out of range", t.Tcp.Port)
		}
	}
	return nil
}

// checkReferences checks what spec names in the store: its dependencies
// exist and form no cycle with the other services' (spec replaces the
// service of the same name), its pinned node and networks exist, and no
// other service holds a port it publishes. It fills in the id of each
// secret and config spec references, by name.
func checkReferences(tx store.ReadTx, spec *api.ServiceSpec) error {
	specs := []*api.ServiceSpec{spec}
	names := map[string]bool{spec.Name: true}
	for _, s := range tx.ListServices() {
		if s.Spec.Name != spec.Name {
			specs = append(specs, s.Spec)
			names[s.Spec.Name] = true
		}
	}
	for _, d := range spec.DependsOn {
		if !names[d] {
			return invalid("service %s depends on %s, which does not exist", spec.Name, d)
		}
	}
	if cycle := findCycle(specs); cycle != nil {
		return invalid("dependency cycle: %s", strings.Join(cycle, " -> "))
	}
	if pin := spec.GetPlacement().GetPinNode(); pin != "" && FindNode(tx, pin) == nil {
		return invalid("service %s is pinned to node %q, which does not exist", spec.Name, pin)
	}
	if err := checkNetworks(tx, spec); err != nil {
		return err
	}
	if err := resolveFileRefs(tx, spec); err != nil {
		return err
	}
	if err := checkOwnPorts(tx, spec); err != nil {
		return err
	}
	return checkPublished(tx, spec)
}

// checkName refuses what may not name a service or a network (services
// name their networks, and DNS answers both).
func checkName(kind, name string) error {
	if !serviceName.MatchString(name) {
		return invalid("%s name %q: use 1-63 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit", kind, name)
	}
	return nil
}

func invalid(format string, args ...any) error {
	return reason.Error(codes.InvalidArgument, reason.InvalidSpec, format, args...)
}
