package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/client"
)

// A config's inspect shows its data (base64, as Docker's does): configs
// hold nothing secret. Its ls does not.
var configCalls = fileCalls{
	word: "config", plural: "configs",
	create: func(ctx context.Context, c *client.Client, spec *api.FileSpec) (string, error) {
		resp, err := c.Control.CreateConfig(ctx, &api.CreateConfigRequest{Spec: spec})
		return resp.GetConfig().GetId(), err
	},
	list: func(ctx context.Context, c *client.Client, cons api.ReadConsistency) ([]fileObj, error) {
		resp, err := c.Control.ListConfigs(ctx, &api.ListConfigsRequest{Consistency: cons})
		var out []fileObj
		for _, s := range resp.GetConfigs() {
			out = append(out, s)
		}
		return out, err
	},
	inspect: func(ctx context.Context, c *client.Client, name string, cons api.ReadConsistency) (fileObj, []string, error) {
		resp, err := c.Control.GetConfig(ctx, &api.GetConfigRequest{Config: name, Consistency: cons})
		return resp.GetConfig(), resp.GetServices(), err
	},
	remove: func(ctx context.Context, c *client.Client, name string) error {
		_, err := c.Control.RemoveConfig(ctx, &api.RemoveConfigRequest{Config: name})
		return err
	},
}

func configCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Manage configs (services get them with --config, as files)"}
	cmd.AddCommand(fileCreateCmd(g, configCalls), fileLsCmd(g, configCalls), fileInspectCmd(g, configCalls), fileRmCmd(g, configCalls))
	return cmd
}
