package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/client"
	"github.com/jaco-project/jaco/internal/compose"
)

func stackCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "stack", Short: "Deploy and manage compose files as stacks of services"}
	cmd.AddCommand(stackDeployCmd(g), stackLsCmd(g), stackServicesCmd(g), stackPsCmd(g), stackRmCmd(g))
	return cmd
}

// stackName is what may name a stack: a compose project name (no '.')
// that leaves room for the _SERVICE suffix within jaco's 63 characters.
var stackName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,49}$`)

func checkStackName(name string) error {
	if !stackName.MatchString(name) {
		return fmt.Errorf("stack name %q: use 1-50 lowercase letters, digits, '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

func stackDeployCmd(g *globals) *cobra.Command {
	var files, profiles []string
	var prune bool
	var wf waitFlags
	var ra registryAuthFlags
	cmd := &cobra.Command{
		Use:   "deploy -c compose.yaml [-c override.yaml] [--prune] [--with-registry-auth] NAME",
		Short: "Create or update a stack's services, networks, secrets and configs from compose files",
		Long: "Create or update a stack from compose files (${VAR} interpolated from the environment as docker\n" +
			"stack deploy does, no .env file read; later files overriding earlier ones, profiles).\n" +
			"Services are named NAME_SERVICE, networks, secrets, configs and volumes NAME_KEY (a volume's name:\n" +
			"is kept as given; external ones keep their name and must exist); all carry the label\n" +
			compose.NamespaceLabel + "=NAME. Networks, secrets, configs and volumes are created when missing (a\n" +
			"volume with the file's driver_opts and labels). A service is created when new and\n" +
			"updated, under its update policy, only when its spec changed; --prune removes the stack's services\n" +
			"the files no longer have.\n" +
			"All of it is one write: a part the manager refuses refuses the whole deploy, and nothing changes.\n" +
			"--with-registry-auth sends each image's registry credentials with the services deploy creates or\n" +
			"changes (an image whose registry has none pulls without, with a warning); an unchanged service keeps\n" +
			"those it has (jaco service update NAME --with-registry-auth replaces them).\n" +
			"Every key jaco cannot honour is refused by name, all in one error (unsupported_compose_key, exit 2),\n" +
			"before any change. Keys without meaning in a cluster (container_name, expose, links, build beside an\n" +
			"image) are accepted with one warning line each; restart is read as deploy.restart_policy when that is\n" +
			"absent. A bridge network is the stack's own overlay network (with a warning)." + waitHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := checkStackName(name); err != nil {
				return err
			}
			if len(files) == 0 {
				return errors.New("give the compose file with -c FILE")
			}
			for _, f := range files {
				// A file that cannot be read is a failure (1); what the
				// files say is the usage (2).
				if _, err := os.Stat(f); err != nil {
					return failure{err}
				}
			}
			// compose-go warns through logrus (the obsolete version key; an
			// unset variable is not warned of, as docker stack deploy does
			// not): print those as the CLI's lines.
			logrus.SetOutput(cmd.ErrOrStderr())
			logrus.SetFormatter(warningLines{})
			warn := func(line string) { fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", terminalSafe(line)) }
			st, err := compose.Load(cmd.Context(), compose.Options{Files: files, Name: name, Env: os.Environ(), Profiles: profiles, Warn: warn})
			if reason.Of(err) == reason.UnsupportedComposeKey {
				// A usage mistake (exit 2) that keeps its reason word.
				printFailure(cmd.ErrOrStderr(), err)
				return exitStatus(2)
			}
			if err != nil {
				return err
			}
			if err := ra.applyStack(cmd.ErrOrStderr(), st.Services); err != nil {
				return err
			}
			data, err := readStackFiles(st)
			if err != nil {
				return failure{err}
			}
			return g.stream(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				d := &deployer{g: g, cmd: cmd, c: c, st: st, data: data, prune: prune}
				changed, err := d.run(ctx)
				if err != nil || wf.detach {
					return err
				}
				var errs []error
				for _, ch := range changed {
					if err := g.wait(ctx, cmd, c, &wf, ch.kind, ch.svc); err != nil {
						errs = append(errs, err)
					}
				}
				return lastOf(cmd.ErrOrStderr(), errs)
			})
		},
	}
	cmd.Flags().StringArrayVarP(&files, "compose-file", "c", nil, "compose file (repeatable: later files override earlier ones)")
	cmd.Flags().StringArrayVar(&profiles, "profile", nil, "enable the services of this profile (repeatable; default: $COMPOSE_PROFILES)")
	cmd.Flags().BoolVar(&prune, "prune", false, "remove the stack's services the files no longer have")
	ra.register(cmd.Flags())
	wf.register(cmd)
	return cmd
}

// readStackFiles reads the secrets' and configs' files before any call,
// so a missing file changes nothing.
func readStackFiles(st *compose.Stack) (map[string][]byte, error) {
	data := map[string][]byte{}
	for _, f := range append(append([]compose.File(nil), st.Secrets...), st.Configs...) {
		if f.External {
			continue
		}
		b, err := os.ReadFile(f.Path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		data[f.Name] = b
	}
	return data, nil
}

// stackServices are the services labelled as the stack's.
func stackServices(ctx context.Context, c *client.Client, cons api.ReadConsistency, name string) ([]*api.Service, error) {
	svcs, _, err := stackServicesCounted(ctx, c, cons, name)
	return svcs, err
}

// stackServicesCounted is stackServices with the replica counts of every
// service, by id.
func stackServicesCounted(ctx context.Context, c *client.Client, cons api.ReadConsistency, name string) ([]*api.Service, map[string]*api.ReplicaCount, error) {
	all, counts, err := c.ListServicesCounted(ctx, &api.ListServicesRequest{Consistency: cons})
	if err != nil {
		return nil, nil, err
	}
	var out []*api.Service
	for _, s := range all {
		if s.GetSpec().GetLabels()[compose.NamespaceLabel] == name {
			out = append(out, s)
		}
	}
	return out, counts, nil
}

// warningLines formats a logrus entry as "warning: MESSAGE".
type warningLines struct{}

func (warningLines) Format(e *logrus.Entry) ([]byte, error) {
	return []byte("warning: " + terminalSafe(e.Message) + "\n"), nil
}
