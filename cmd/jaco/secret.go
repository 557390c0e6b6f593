package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/client"
)

// maxFileBytes is the most a secret's or config's data may hold (the
// manager refuses more; checked here too so a large file is not sent).
const maxFileBytes = 500 << 10

// fileCalls are the Control calls of one kind of file, secret or config,
// so that `jaco secret` and `jaco config` are written once.
type fileCalls struct {
	word, plural string
	create       func(ctx context.Context, c *client.Client, spec *api.FileSpec) (id string, err error)
	list         func(ctx context.Context, c *client.Client, cons api.ReadConsistency) ([]fileObj, error)
	inspect      func(ctx context.Context, c *client.Client, name string, cons api.ReadConsistency) (obj fileObj, services []string, err error)
	remove       func(ctx context.Context, c *client.Client, name string) error
}

// fileObj is an *api.Secret or *api.Config.
type fileObj interface {
	proto.Message
	GetId() string
	GetMeta() *api.Meta
	GetSpec() *api.FileSpec
}

var secretCalls = fileCalls{
	word: "secret", plural: "secrets",
	create: func(ctx context.Context, c *client.Client, spec *api.FileSpec) (string, error) {
		resp, err := c.Control.CreateSecret(ctx, &api.CreateSecretRequest{Spec: spec})
		return resp.GetSecret().GetId(), err
	},
	list: func(ctx context.Context, c *client.Client, cons api.ReadConsistency) ([]fileObj, error) {
		resp, err := c.Control.ListSecrets(ctx, &api.ListSecretsRequest{Consistency: cons})
		var out []fileObj
		for _, s := range resp.GetSecrets() {
			out = append(out, s)
		}
		return out, err
	},
	inspect: func(ctx context.Context, c *client.Client, name string, cons api.ReadConsistency) (fileObj, []string, error) {
		resp, err := c.Control.GetSecret(ctx, &api.GetSecretRequest{Secret: name, Consistency: cons})
		return resp.GetSecret(), resp.GetServices(), err
	},
	remove: func(ctx context.Context, c *client.Client, name string) error {
		_, err := c.Control.RemoveSecret(ctx, &api.RemoveSecretRequest{Secret: name})
		return err
	},
}

func secretCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "secret", Short: "Manage secrets (services get them with --secret, as files held in memory)"}
	cmd.AddCommand(fileCreateCmd(g, secretCalls), fileLsCmd(g, secretCalls), fileInspectCmd(g, secretCalls), fileRmCmd(g, secretCalls))
	return cmd
}

func fileCreateCmd(g *globals, k fileCalls) *cobra.Command {
	return &cobra.Command{
		Use:   "create NAME FILE|-",
		Short: fmt.Sprintf("Create a %s from a file, or from standard input with -", k.word),
		Long: fmt.Sprintf("Create a %s from a file, or from standard input with - (at most 500 KiB).\n"+
			"The value is never taken from a flag or an argument, where shell history and ps would keep it.", k.word),
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readFileArg(cmd.InOrStdin(), args[1])
			if err != nil {
				return failure{fmt.Errorf("%s %s: %w", k.word, args[0], err)}
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				id, err := k.create(ctx, c, &api.FileSpec{Name: args[0], Data: data})
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), id)
				return nil
			})
		},
	}
}

// readFileArg reads the file path names, standard input for -, refusing
// more than maxFileBytes.
func readFileArg(stdin io.Reader, path string) ([]byte, error) {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("%s holds more than %d bytes (500 KiB), the limit", path, maxFileBytes)
	}
	return data, nil
}

// fileView is a row of `jaco secret ls` and `jaco config ls`.
type fileView struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
}

func fileLsCmd(g *globals, k fileCalls) *cobra.Command {
	lf := listFlags{keys: map[string][]string{"id": nil, "name": nil}}
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List " + k.plural,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := lf.check(); err != nil {
				return err
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				objs, err := k.list(ctx, c, g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LOCAL))
				if err != nil {
					return err
				}
				views := make([]fileView, 0, len(objs))
				for _, o := range objs {
					v := fileView{ID: o.GetId(), Name: o.GetSpec().GetName(), Created: o.GetMeta().GetCreatedAt().AsTime().UTC()}
					if lf.match("id", prefix(v.ID)) && lf.match("name", prefix(v.Name)) {
						views = append(views, v)
					}
				}
				return writeList(cmd, &lf, views, func(v fileView) string { return v.ID }, fileTable)
			})
		},
	}
	lf.add(cmd, "id (prefix), name (prefix)")
	return cmd
}

func fileTable(w io.Writer, views []fileView) error {
	rows := make([][]string, len(views))
	for i, v := range views {
		rows[i] = []string{v.ID, v.Name, ago(v.Created)}
	}
	return table(w, "ID\tNAME\tCREATED", rows)
}

func fileInspectCmd(g *globals, k fileCalls) *cobra.Command {
	var out inspectFlags
	short := fmt.Sprintf("Show one %s and the services using it as JSON (--pretty for people)", k.word)
	if k.word == "secret" {
		short += "; never its value"
	}
	cmd := &cobra.Command{
		Use:   "inspect NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				obj, services, err := k.inspect(ctx, c, args[0], g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE))
				if err != nil {
					return err
				}
				view, _ := protoView(obj).(jsonObject)
				if services == nil {
					services = []string{}
				}
				view = append(view, jsonField{Key: "services", Value: services})
				return out.write(cmd.OutOrStdout(), view)
			})
		},
	}
	out.add(cmd)
	return cmd
}

func fileRmCmd(g *globals, k fileCalls) *cobra.Command {
	return rmCmd(g, "rm NAME...", fmt.Sprintf("Remove %s no service uses", k.plural), k.remove)
}
