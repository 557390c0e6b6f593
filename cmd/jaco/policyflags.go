package main

import (
	"github.com/spf13/pflag"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/rollout"
)

// policyFlags are the six --update-* or --rollback-* flags, Swarm's
// update config.
type policyFlags struct {
	prefix          string // "update" or "rollback"
	parallelism     uint64
	delay, monitor  durationValue
	order, action   choiceValue
	maxFailureRatio ratioValue
}

func (p *policyFlags) register(fs *pflag.FlagSet, prefix string) {
	p.prefix = prefix
	what := map[string]string{"update": "an update", "rollback": "a rollback"}[prefix]
	actions := []string{"pause", "continue", "rollback"}
	actionHelp := "pause, continue or rollback (to the previous spec)"
	if prefix == "rollback" {
		actions, actionHelp = actions[:2], "pause or continue"
	}
	p.delay = durationValue{max: rollout.MaxPolicyDuration}
	p.monitor = durationValue{d: rollout.DefaultMonitor, max: rollout.MaxPolicyDuration}
	p.order = choiceValue{word: "stop-first", choices: []string{"stop-first", "start-first"}}
	p.action = choiceValue{word: "pause", choices: actions}
	fs.Uint64Var(&p.parallelism, prefix+"-parallelism", 1, "replicas replaced at a time in "+what+" (0: all at once)")
	fs.Var(&p.delay, prefix+"-delay", "wait between replacing one group of replicas and the next in "+what+" (up to 1h)")
	fs.Var(&p.order, prefix+"-order", "stop-first (stop the old replica, then start the new) or start-first (overlap) in "+what)
	fs.Var(&p.action, prefix+"-failure-action", "when replicas fail in "+what+": "+actionHelp)
	fs.Var(&p.monitor, prefix+"-monitor", "a new replica counts as replaced once it has run (and is healthy) this long (up to 1h)")
	fs.Var(&p.maxFailureRatio, prefix+"-max-failure-ratio", "share of replicas (0 to 1) that may fail in "+what+" before the failure action is taken")
}

// defaultPolicy is the policy a service without one follows (the server
// applies the same), every field explicit.
func defaultPolicy() *api.UpdatePolicy {
	return &api.UpdatePolicy{
		Parallelism:   1,
		Delay:         durationpb.New(0),
		Order:         api.UpdateOrder_UPDATE_ORDER_STOP_FIRST,
		FailureAction: api.UpdateFailureAction_UPDATE_FAILURE_ACTION_PAUSE,
		Monitor:       durationpb.New(rollout.DefaultMonitor),
	}
}

// apply returns cur changed by the flags given: cur itself when none is
// given (a nil policy stays nil, meaning the defaults), else a copy of cur
// (or of the defaults when cur is nil) with just those fields changed.
func (p *policyFlags) apply(fs *pflag.FlagSet, cur *api.UpdatePolicy) *api.UpdatePolicy {
	changed := func(name string) bool { return fs.Changed(p.prefix + "-" + name) }
	names := []string{"parallelism", "delay", "order", "failure-action", "monitor", "max-failure-ratio"}
	given := false
	for _, n := range names {
		given = given || changed(n)
	}
	if !given {
		return cur
	}
	pol := defaultPolicy()
	if cur != nil {
		pol = proto.Clone(cur).(*api.UpdatePolicy)
	}
	if changed("parallelism") {
		pol.Parallelism = p.parallelism
	}
	if changed("delay") {
		pol.Delay = durationpb.New(p.delay.d)
	}
	if changed("order") {
		pol.Order = map[string]api.UpdateOrder{
			"stop-first":  api.UpdateOrder_UPDATE_ORDER_STOP_FIRST,
			"start-first": api.UpdateOrder_UPDATE_ORDER_START_FIRST,
		}[p.order.word]
	}
	if changed("failure-action") {
		pol.FailureAction = map[string]api.UpdateFailureAction{
			"pause":    api.UpdateFailureAction_UPDATE_FAILURE_ACTION_PAUSE,
			"continue": api.UpdateFailureAction_UPDATE_FAILURE_ACTION_CONTINUE,
			"rollback": api.UpdateFailureAction_UPDATE_FAILURE_ACTION_ROLLBACK,
		}[p.action.word]
	}
	if changed("monitor") {
		pol.Monitor = durationpb.New(p.monitor.d)
	}
	if changed("max-failure-ratio") {
		pol.MaxFailureRatio = float64(p.maxFailureRatio)
	}
	return pol
}
