package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/api/rollout"
	"github.com/jaco-project/jaco/client"
	"github.com/jaco-project/jaco/internal/launchdir"
)

// launchFlags are the flags of `jaco launch` itself.
type launchFlags struct {
	name       string
	meta       []string
	resume     string
	detach     bool
	wait       time.Duration
	monitor    time.Duration
	staleAfter time.Duration
}

func launchCmd(g *globals) *cobra.Command {
	var f launchFlags
	cmd := &cobra.Command{
		Use:   "launch DIR [-L NAME] [-D KEY=VALUE | -D FLAG]... | launch --resume ID|NAME [DIR]",
		Short: "Launch a configuration directory (clusterd style) as a namespace of services",
		Long: "Launch a configuration: a directory with one subdirectory per service, each holding a `service`\n" +
			"file (key = value settings) and its hooks (prepare, launch, finish, cleanup; launch required).\n" +
			"The whole directory is validated first; any problem is named FILE:LINE and nothing is created\n" +
			"(invalid_launch_config, exit 2). The launch becomes a namespace with a new UUID, printed first:\n" +
			"its services are named NAME_SERVICE (or the UUID's first 8 characters, without -L), labelled\n" +
			launchdir.LabelID + "=UUID, " + launchdir.LabelName + "=NAME and " + launchdir.LabelMetaPrefix + "KEY=VALUE per -D, and every hook\n" +
			"sees $" + launchdir.EnvNamespaceID + " and $" + launchdir.EnvMetaPrefix + "KEY (KEY uppercased, '-' as '_'). If a service cannot be\n" +
			"created, those created are removed again. Then it waits (unless -d) until every service has run\n" +
			"its replicas for --monitor, or one failed past its restart policy (exit 1).\n\n" +
			"--resume re-examines a namespace: services of it that are missing are created again from the\n" +
			"directory (DIR, else the one it was launched from), a stopped namespace is scaled back up, and\n" +
			"services with replicas given up on are restarted (forced update).",
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.resume != "" {
				if cmd.Flags().Changed("name") || cmd.Flags().Changed("meta") {
					return errors.New("--resume keeps the namespace's name and metadata: give no -L or -D")
				}
				if len(args) > 1 {
					return errors.New("--resume takes at most the configuration directory")
				}
				return resumeLaunch(cmd, g, &f, args)
			}
			if len(args) != 1 {
				return errors.New("give one configuration directory: jaco launch DIR")
			}
			return launch(cmd, g, &f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.name, "name", "L", "", "name of the namespace (1-32 lowercase letters, digits, '.' or '-'); its services are NAME_SERVICE")
	fl.StringArrayVarP(&f.meta, "meta", "D", nil, "metadata KEY=VALUE, or a bare FLAG (true); hooks see it as $JACO_META_KEY (repeatable)")
	fl.StringVar(&f.resume, "resume", "", "re-examine the namespace ID or NAME: re-create missing services, scale a stopped one back up")
	fl.BoolVarP(&f.detach, "detach", "d", false, "return once the services are created, without waiting for them to run")
	fl.DurationVar(&f.wait, "wait", 2*time.Minute, "how long to wait for the namespace to run before giving up (it stays; see jaco launch ls)")
	fl.DurationVar(&f.monitor, "monitor", rollout.DefaultMonitor, "the namespace counts as running once it has run this long with no replica changing state")
	fl.DurationVar(&f.staleAfter, "stale-after", 5*time.Minute, "a namespace scheduling with nothing happening for this long is stale")
	cmd.AddCommand(launchLsCmd(g), launchInspectCmd(g), launchStopCmd(g), launchRmCmd(g))
	return cmd
}

// loadLaunch reads a configuration: an invalid one is a usage mistake
// (exit 2) that keeps its reason word, one that cannot be read a failure.
func loadLaunch(cmd *cobra.Command, dir string) (*launchdir.Config, error) {
	cfg, err := launchdir.Load(dir)
	var inv *launchdir.Invalid
	if errors.As(err, &inv) {
		printFailure(cmd.ErrOrStderr(), reason.Error(codes.InvalidArgument, reason.InvalidLaunchConfig, "%s", inv.Error()))
		return nil, exitStatus(2)
	}
	if err != nil {
		return nil, failure{err}
	}
	return cfg, nil
}

func launch(cmd *cobra.Command, g *globals, f *launchFlags, dir string) error {
	if f.name != "" {
		if err := launchdir.CheckName(f.name); err != nil {
			return err
		}
	}
	meta, err := launchdir.ParseMeta(f.meta)
	if err != nil {
		return err
	}
	cfg, err := loadLaunch(cmd, dir)
	if err != nil {
		return err
	}
	ns := launchdir.Namespace{ID: uuid.NewString(), Name: f.name, Meta: meta}
	specs, err := launchdir.Instantiate(cfg, ns)
	if err != nil {
		return err
	}
	return g.stream(cmd.Context(), func(ctx context.Context, c *client.Client) error {
		cctx, cancel := context.WithTimeout(ctx, g.timeout)
		err := createNamespace(cctx, cmd.OutOrStdout(), c, g, ns, specs)
		cancel()
		if err != nil || f.detach {
			return err
		}
		return waitLaunch(ctx, cmd.OutOrStdout(), c, ns.ID, f)
	})
}

// createNamespace creates specs, the services of ns, after checking that
// no service has one of their names and no namespace has ns's name. When
// one cannot be created, those created before it are removed: a launch
// leaves the whole namespace or nothing.
func createNamespace(ctx context.Context, out io.Writer, c *client.Client, g *globals, ns launchdir.Namespace, specs []*api.ServiceSpec) error {
	existing, err := c.ListServices(ctx, &api.ListServicesRequest{Consistency: g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE)})
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for _, s := range existing {
		names[s.Spec.Name] = true
		if other, ok := launchdir.FromLabels(s.Spec.Labels); ok && ns.Name != "" && other.Name == ns.Name {
			return fmt.Errorf("a launch named %s exists (%s): choose another -L, or jaco launch rm %s", ns.Name, other.ID, ns.Name)
		}
	}
	for _, spec := range specs {
		if names[spec.Name] {
			return fmt.Errorf("service %s exists: choose another -L", spec.Name)
		}
	}
	fmt.Fprintln(out, ns.ID)
	return createServices(ctx, out, c, g, specs)
}

// createServices creates specs in order; on a failure it removes what it
// created, and the failed one too in case its creation did apply.
func createServices(ctx context.Context, out io.Writer, c *client.Client, g *globals, specs []*api.ServiceSpec) error {
	var created []string
	for _, spec := range specs {
		fmt.Fprintf(out, "Creating service %s\n", spec.Name)
		if _, err := c.Control.CreateService(ctx, &api.CreateServiceRequest{Spec: spec}); err != nil {
			undo(ctx, out, c, g, append(created, spec.Name))
			return naming(err, spec.Name)
		}
		created = append(created, spec.Name)
	}
	return nil
}

// undo removes the named services, last first (dependents before their
// dependencies), with a context of its own: the creation's may be what
// ran out. A service that is not there is no error.
func undo(ctx context.Context, out io.Writer, c *client.Client, g *globals, names []string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.timeout)
	defer cancel()
	for i := len(names) - 1; i >= 0; i-- {
		_, err := c.Control.RemoveService(ctx, &api.RemoveServiceRequest{Service: names[i]})
		switch {
		case err == nil:
			fmt.Fprintf(out, "Removed service %s\n", names[i])
		case reason.Of(err) != reason.NotFound:
			fmt.Fprintf(out, "Could not remove service %s: %s (jaco service rm %s)\n", names[i], describe(err), names[i])
		}
	}
}

// waitLaunch follows namespace id until it runs (nil) or fails, for at
// most f.wait.
func waitLaunch(ctx context.Context, out io.Writer, c *client.Client, id string, f *launchFlags) error {
	deadline := time.Now().Add(f.wait)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		v, err := namespaceNow(ctx, c, id, f.staleAfter)
		if err != nil {
			return err
		}
		switch v.State {
		case launchRunning:
			// Running, and nothing has changed for the monitor period: a
			// replica that starts and soon fails is not taken for running.
			if time.Since(v.Since) >= f.monitor {
				fmt.Fprintf(out, "Launch %s is running\n", id)
				return nil
			}
		case launchFailed:
			for _, s := range v.Services {
				if s.GivenUp > 0 && s.Running+s.Done < s.Desired {
					return reason.Error(codes.FailedPrecondition, reason.ReplicaFailed,
						"launch %s failed: %d of service %s's replicas failed past its restart policy (jaco service ps %s --no-trunc)", id, s.GivenUp, s.Name, s.Name)
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("launch %s is still %s after %v; it stays (jaco launch ls, jaco launch inspect %s, jaco launch rm %s)", id, v.State, f.wait, id, id)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// namespaceNow reads the namespace id's state from the daemon's store.
func namespaceNow(ctx context.Context, c *client.Client, id string, staleAfter time.Duration) (launchView, error) {
	cons := api.ReadConsistency_READ_CONSISTENCY_LOCAL
	svcs, err := c.ListServices(ctx, &api.ListServicesRequest{Consistency: cons})
	if err != nil {
		return launchView{}, err
	}
	tasks, err := c.ListTasks(ctx, &api.ListTasksRequest{Consistency: cons})
	if err != nil {
		return launchView{}, err
	}
	for _, v := range namespaceViews(svcs, tasks, time.Now(), staleAfter) {
		if v.ID == id {
			return v, nil
		}
	}
	return launchView{}, fmt.Errorf("launch %s has no services left", id)
}

// naming puts the service's name before a refusal's sentence, keeping its
// code and reason word.
func naming(err error, service string) error {
	st, ok := status.FromError(err)
	if w := reason.Of(err); ok && w != "" {
		return reason.Error(st.Code(), w, "service %s: %s", service, st.Message())
	}
	return fmt.Errorf("service %s: %w", service, err)
}
