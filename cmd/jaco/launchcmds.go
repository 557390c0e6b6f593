package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/client"
	"github.com/jaco-project/jaco/internal/launchdir"
)

// launchLsRow is a row of `jaco launch ls`: a namespace without its
// services' detail.
type launchLsRow struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	State    string    `json:"state"`
	Since    time.Time `json:"since"`
	Services int       `json:"services"`
}

func launchLsCmd(g *globals) *cobra.Command {
	lf := listFlags{keys: map[string][]string{"name": nil, "id": nil,
		"state": {launchScheduling, launchRunning, launchFailed, launchStale, launchStopped}}}
	var staleAfter time.Duration
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List launched namespaces: id, name, state (scheduling, running, failed, stale, stopped), since",
		Long: "List launched namespaces with their state, judged from their services' replicas:\n" +
			"  running     every service runs its desired replicas (or they ended successfully, not restarted)\n" +
			"  failed      a service is short of replicas and has one that failed past its restart policy\n" +
			"  scheduling  otherwise: replicas are being placed, prepared or started, or restarted\n" +
			"  stale       scheduling, and nothing has happened for --stale-after (the spec's cluster-find-stale)\n" +
			"  stopped     stopped by jaco launch stop (jaco launch --resume starts it again)\n" +
			"SINCE is the namespace's latest change: a service written or a replica changing state.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := lf.check(); err != nil {
				return err
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				views, err := listNamespaces(ctx, c, g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LOCAL), staleAfter)
				if err != nil {
					return err
				}
				rows := []launchLsRow{}
				for _, v := range views {
					if lf.match("name", equal(v.Name)) && lf.match("id", prefix(v.ID)) && lf.match("state", equal(v.State)) {
						rows = append(rows, launchLsRow{ID: v.ID, Name: v.Name, State: v.State, Since: v.Since, Services: len(v.Services)})
					}
				}
				return writeList(cmd, &lf, rows, func(r launchLsRow) string { return r.ID }, func(w io.Writer, rows []launchLsRow) error {
					out := make([][]string, len(rows))
					for i, r := range rows {
						out[i] = []string{r.ID, orDash(r.Name), r.State, ago(r.Since), fmt.Sprint(r.Services)}
					}
					return table(w, "ID\tNAME\tSTATE\tSINCE\tSERVICES", out)
				})
			})
		},
	}
	cmd.Flags().DurationVar(&staleAfter, "stale-after", 5*time.Minute, "a namespace scheduling with nothing happening for this long shows stale")
	lf.add(cmd, "name, id (prefix), state (scheduling|running|failed|stale|stopped)")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func listNamespaces(ctx context.Context, c *client.Client, cons api.ReadConsistency, staleAfter time.Duration) ([]launchView, error) {
	svcs, err := c.ListServices(ctx, &api.ListServicesRequest{Consistency: cons})
	if err != nil {
		return nil, err
	}
	tasks, err := c.ListTasks(ctx, &api.ListTasksRequest{Consistency: cons})
	if err != nil {
		return nil, err
	}
	return namespaceViews(svcs, tasks, time.Now(), staleAfter), nil
}

func launchInspectCmd(g *globals) *cobra.Command {
	var out inspectFlags
	var staleAfter time.Duration
	cmd := &cobra.Command{
		Use:   "inspect ID|NAME",
		Short: "Show a launched namespace: state, metadata, directory and each service's replicas (JSON; --pretty)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				views, err := listNamespaces(ctx, c, g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE), staleAfter)
				if err != nil {
					return err
				}
				v, err := pickNamespace(views, args[0])
				if err != nil {
					return err
				}
				return out.write(cmd.OutOrStdout(), v)
			})
		},
	}
	cmd.Flags().DurationVar(&staleAfter, "stale-after", 5*time.Minute, "a namespace scheduling with nothing happening for this long is stale")
	out.add(cmd)
	return cmd
}

// pickNamespace finds the namespace arg names: its id, its name, or a
// prefix of one id only.
func pickNamespace(views []launchView, arg string) (launchView, error) {
	for _, v := range views {
		if v.ID == arg {
			return v, nil
		}
	}
	for _, v := range views {
		if v.Name != "" && v.Name == arg {
			return v, nil
		}
	}
	var found []launchView
	for _, v := range views {
		if strings.HasPrefix(v.ID, arg) {
			found = append(found, v)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return launchView{}, reason.Error(codes.NotFound, reason.NotFound, "no launch with id or name %s", arg)
	}
	return launchView{}, fmt.Errorf("%s is the start of %d launch ids: give more of it", arg, len(found))
}

// namespaceServices finds the namespace arg names and its services.
func namespaceServices(ctx context.Context, c *client.Client, cons api.ReadConsistency, arg string) (launchView, []*api.Service, error) {
	svcs, err := c.ListServices(ctx, &api.ListServicesRequest{Consistency: cons})
	if err != nil {
		return launchView{}, nil, err
	}
	v, err := pickNamespace(namespaceViews(svcs, nil, time.Now(), time.Hour), arg)
	if err != nil {
		return launchView{}, nil, err
	}
	var out []*api.Service
	for _, s := range svcs {
		if s.Spec.GetLabels()[launchdir.LabelID] == v.ID {
			out = append(out, s)
		}
	}
	return v, out, nil
}

func launchStopCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "stop ID|NAME",
		Short: "Stop a launched namespace: every service scaled to 0; the services stay (jaco launch --resume)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				cons := g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE)
				_, svcs, err := namespaceServices(ctx, c, cons, args[0])
				if err != nil {
					return err
				}
				now := time.Now().UTC().Format(time.RFC3339)
				for _, s := range removalOrder(svcs) {
					fmt.Fprintf(cmd.OutOrStdout(), "Stopping service %s\n", s.Spec.Name)
					_, err := updateService(ctx, c, cons, s.Id, func(spec *api.ServiceSpec) error {
						stopSpec(spec, now)
						return nil
					})
					if err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
}

// stopSpec scales spec to nothing and marks it stopped: a replicated
// service to 0 replicas, a global one behind a constraint no node meets.
func stopSpec(spec *api.ServiceSpec, when string) {
	if spec.Labels == nil {
		spec.Labels = map[string]string{}
	}
	if _, ok := spec.Labels[labelStopped]; !ok {
		spec.Labels[labelStopped] = when
	}
	if spec.Mode == api.ServiceMode_SERVICE_MODE_GLOBAL {
		if spec.Placement == nil {
			spec.Placement = &api.Placement{}
		}
		for _, c := range spec.Placement.Constraints {
			if c == stopConstraint {
				return
			}
		}
		spec.Placement.Constraints = append(spec.Placement.Constraints, stopConstraint)
		return
	}
	spec.Replicas = 0
}

func launchRmCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "rm ID|NAME",
		Aliases: []string{"remove"},
		Short:   "Remove a launched namespace: its services, dependents first",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				_, svcs, err := namespaceServices(ctx, c, g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE), args[0])
				if err != nil {
					return err
				}
				for _, s := range removalOrder(svcs) {
					fmt.Fprintf(cmd.OutOrStdout(), "Removing service %s\n", s.Spec.Name)
					if _, err := c.Control.RemoveService(ctx, &api.RemoveServiceRequest{Service: s.Id}); err != nil {
						return mayHaveApplied(err, "jaco service inspect "+s.Spec.Name)
					}
				}
				return nil
			})
		},
	}
}
