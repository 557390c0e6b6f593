package launchdir

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
)

// setting is one key of the service file: how its value is written into
// the spec. repeatable keys may appear on several lines (each adds).
type setting struct {
	repeatable bool
	apply      func(spec *api.ServiceSpec, value string) error
}

// settings are the keys a service file may hold. The names follow the
// clusterd spec where it names them (prepare.start_limit,
// launch.shutdown_grace_period, launch.abort_grace_period).
var settings = map[string]setting{
	"replicas": {apply: func(s *api.ServiceSpec, v string) error {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return fmt.Errorf("want a whole number of replicas such as 3")
		}
		s.Replicas = n
		return nil
	}},
	"mode": {apply: func(s *api.ServiceSpec, v string) error {
		switch v {
		case "replicated":
			s.Mode = api.ServiceMode_SERVICE_MODE_REPLICATED
		case "global":
			s.Mode = api.ServiceMode_SERVICE_MODE_GLOBAL
		default:
			return fmt.Errorf("want replicated or global")
		}
		return nil
	}},
	"depends_on": {repeatable: true, apply: func(s *api.ServiceSpec, v string) error {
		for _, d := range strings.Split(v, ",") {
			d = strings.TrimSpace(d)
			if d == "" || !serviceName.MatchString(d) {
				return fmt.Errorf("want service directory names separated by commas")
			}
			if d == s.Name {
				return fmt.Errorf("a service cannot depend on itself")
			}
			for _, have := range s.DependsOn {
				if have == d {
					return fmt.Errorf("%s is named twice", d)
				}
			}
			s.DependsOn = append(s.DependsOn, d)
		}
		return nil
	}},
	"restart.condition": {apply: func(s *api.ServiceSpec, v string) error {
		c, ok := map[string]api.RestartCondition{
			"any": api.RestartCondition_RESTART_CONDITION_ANY, "on-failure": api.RestartCondition_RESTART_CONDITION_ON_FAILURE,
			"none": api.RestartCondition_RESTART_CONDITION_NONE,
		}[v]
		if !ok {
			return fmt.Errorf("want any, on-failure or none")
		}
		restart(s).Condition = c
		return nil
	}},
	"restart.delay":  {apply: duration(func(s *api.ServiceSpec, d *durationpb.Duration) { restart(s).Delay = d })},
	"restart.window": {apply: duration(func(s *api.ServiceSpec, d *durationpb.Duration) { restart(s).Window = d })},
	"restart.max_attempts": {apply: func(s *api.ServiceSpec, v string) error {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return fmt.Errorf("want a whole number (0: unlimited)")
		}
		restart(s).MaxAttempts = n
		return nil
	}},
	"prepare.start_limit": {apply: func(s *api.ServiceSpec, v string) error {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n == 0 {
			return fmt.Errorf("want a whole number of attempts, at least 1")
		}
		s.Bundle.PrepareStartLimit = uint32(n)
		return nil
	}},
	"launch.shutdown_grace_period": {apply: duration(func(s *api.ServiceSpec, d *durationpb.Duration) { s.StopGracePeriod = d })},
	"launch.abort_grace_period":    {apply: duration(func(s *api.ServiceSpec, d *durationpb.Duration) { s.AbortGracePeriod = d })},
	"constraint":                   {repeatable: true, apply: addConstraint},
	"spread":                       {repeatable: true, apply: addSpread},
	"env": {repeatable: true, apply: func(s *api.ServiceSpec, v string) error {
		k, _, ok := strings.Cut(v, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return fmt.Errorf("want KEY=VALUE")
		}
		if strings.HasPrefix(k, "JACO_") {
			return fmt.Errorf("JACO_ variables are set by jaco (metadata comes from jaco launch -D)")
		}
		s.Env = append(s.Env, v)
		return nil
	}},
	"health": {apply: func(s *api.ServiceSpec, v string) error {
		if v != "notify" {
			return fmt.Errorf("want notify (the launch hook sends READY=1 and WATCHDOG=1 to $JACO_NOTIFY_SOCKET)")
		}
		health(s).Test = &api.HealthCheck_Notify{Notify: &api.NotifyCheck{}}
		return nil
	}},
	"health.interval": {apply: duration(func(s *api.ServiceSpec, d *durationpb.Duration) { health(s).Interval = d })},
	"health.retries": {apply: func(s *api.ServiceSpec, v string) error {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return fmt.Errorf("want a whole number of missed intervals")
		}
		health(s).Retries = uint32(n)
		return nil
	}},
	"health.start_period": {apply: duration(func(s *api.ServiceSpec, d *durationpb.Duration) { health(s).StartPeriod = d })},
}

func restart(s *api.ServiceSpec) *api.RestartPolicy {
	if s.Restart == nil {
		s.Restart = &api.RestartPolicy{}
	}
	return s.Restart
}

func health(s *api.ServiceSpec) *api.HealthCheck {
	if s.Health == nil {
		s.Health = &api.HealthCheck{}
	}
	return s.Health
}

func placement(s *api.ServiceSpec) *api.Placement {
	if s.Placement == nil {
		s.Placement = &api.Placement{}
	}
	return s.Placement
}

// duration reads a Go duration (90s, 2m, 1h30m), not negative.
func duration(set func(*api.ServiceSpec, *durationpb.Duration)) func(*api.ServiceSpec, string) error {
	return func(s *api.ServiceSpec, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("want a duration such as 30s, 2m or 1h30m")
		}
		set(s, durationpb.New(d))
		return nil
	}
}

// addConstraint checks a constraint as the manager reads it: ATTRIBUTE==VALUE
// or ATTRIBUTE!=VALUE, the attribute node.id, node.hostname, node.role or
// node.labels.KEY.
func addConstraint(s *api.ServiceSpec, v string) error {
	op := "=="
	i := strings.Index(v, "==")
	if j := strings.Index(v, "!="); j >= 0 && (i < 0 || j < i) {
		op, i = "!=", j
	}
	if i < 0 {
		return fmt.Errorf("want ATTRIBUTE==VALUE or ATTRIBUTE!=VALUE")
	}
	attr, value := strings.TrimSpace(v[:i]), strings.TrimSpace(v[i+len(op):])
	if !knownAttribute(attr) {
		return fmt.Errorf("attribute %q: want node.id, node.hostname, node.role or node.labels.KEY", attr)
	}
	if value == "" || strings.ContainsAny(value, "=!") {
		return fmt.Errorf("want one value after %s", op)
	}
	if attr == "node.role" && value != "manager" && value != "worker" {
		return fmt.Errorf("node.role is manager or worker")
	}
	placement(s).Constraints = append(placement(s).Constraints, attr+op+value)
	return nil
}

// addSpread reads a failure domain: a node label's key (zone), or the
// attribute whole (node.labels.zone).
func addSpread(s *api.ServiceSpec, v string) error {
	attr := v
	if !strings.HasPrefix(v, "node.") {
		attr = "node.labels." + v
	}
	if !knownAttribute(attr) || strings.ContainsAny(v, " \t=") {
		return fmt.Errorf("want a node label key (zone) or node.labels.KEY")
	}
	placement(s).Spread = append(placement(s).Spread, attr)
	return nil
}

func knownAttribute(a string) bool {
	switch a {
	case "node.id", "node.hostname", "node.role":
		return true
	}
	key, ok := strings.CutPrefix(a, "node.labels.")
	return ok && key != ""
}

// parseSettings reads a service file into spec: `key = value` lines,
// blank lines and # comments. Every problem is returned, naming file and
// line.
func parseSettings(file string, data []byte, spec *api.ServiceSpec) []Problem {
	var probs []Problem
	seen := map[string]int{}
	for i, raw := range strings.Split(string(data), "\n") {
		line := i + 1
		text := strings.TrimSpace(raw)
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		bad := func(format string, args ...any) {
			probs = append(probs, Problem{File: file, Line: line, Msg: fmt.Sprintf(format, args...)})
		}
		key, value, ok := strings.Cut(text, "=")
		if !ok {
			bad("want key = value, not %q", text)
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		st, known := settings[key]
		switch {
		case !known:
			bad("unknown key %q", key)
			continue
		case value == "":
			bad("%s has no value", key)
			continue
		case seen[key] > 0 && !st.repeatable:
			bad("%s is set twice (first on line %d)", key, seen[key])
			continue
		}
		if seen[key] == 0 {
			seen[key] = line
		}
		if err := st.apply(spec, value); err != nil {
			bad("%s = %s: %v", key, value, err)
		}
	}
	if spec.Mode == api.ServiceMode_SERVICE_MODE_GLOBAL {
		if seen["replicas"] > 0 {
			probs = append(probs, Problem{File: file, Line: seen["replicas"], Msg: "replicas does not apply to mode = global (one replica per node)"})
		}
		spec.Replicas = 0
	}
	switch h := spec.Health; {
	case h == nil:
	case h.Test == nil:
		line := max(seen["health.interval"], seen["health.start_period"], seen["health.retries"])
		probs = append(probs, Problem{File: file, Line: line, Msg: "health settings without health = notify"})
	case h.Interval.AsDuration() <= 0:
		// The manager refuses it too; here it is refused with the file.
		probs = append(probs, Problem{File: file, Line: seen["health"], Msg: "health = notify needs health.interval above 0 (how often launch sends WATCHDOG=1)"})
	}
	return probs
}
