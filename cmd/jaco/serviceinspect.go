package main

import (
	"context"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/client"
)

func serviceInspectCmd(g *globals) *cobra.Command {
	var out inspectFlags
	cmd := &cobra.Command{
		Use:   "inspect SERVICE",
		Short: "Show one service as JSON (--pretty for people)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Control.GetService(ctx, &api.GetServiceRequest{Service: args[0],
					Consistency: g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE)})
				if err != nil {
					return err
				}
				return out.write(cmd.OutOrStdout(), protoView(withMountTypes(withPublishModes(resp.Service))))
			})
		},
	}
	out.add(cmd)
	return cmd
}

// withMountTypes returns svc with every mount's type spelled out (an
// unset type is a bind mount), so inspect says "bind" and not
// "unspecified"; svc itself is left as it was.
func withMountTypes(svc *api.Service) *api.Service {
	out := proto.CloneOf(svc)
	for _, spec := range []*api.ServiceSpec{out.GetSpec(), out.GetPreviousSpec()} {
		for _, m := range spec.GetMounts() {
			if m.Type == api.MountType_MOUNT_TYPE_UNSPECIFIED {
				m.Type = api.MountType_MOUNT_TYPE_BIND
			}
		}
	}
	return out
}
