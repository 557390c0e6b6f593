package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/paging"
	"github.com/jaco-project/jaco/client"
)

// Volumes (docs/adr/0061-volumes.md): named local volumes, each living on
// the node its first replica was placed on.

func volumeCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "volume", Short: "Manage named volumes (services mount them with --mount type=volume)"}
	cmd.AddCommand(volumeCreateCmd(g), volumeLsCmd(g), volumeInspectCmd(g), volumeRmCmd(g))
	return cmd
}

func volumeCreateCmd(g *globals) *cobra.Command {
	var driver string
	var opts, labels []string
	cmd := &cobra.Command{
		Use:   "create [--driver local] [--opt K=V]... [--label K=V]... NAME",
		Short: "Create a named volume; it lives on the node its first replica is placed on",
		Long: "Create a named volume. It lives nowhere until a replica mounting it is placed; from then on\n" +
			"every replica mounting it runs on that node, and waits (volume_unavailable) while the node\n" +
			"cannot take it, rather than starting elsewhere on an empty volume.\n" +
			"Options are Docker's local driver's: --opt type=tmpfs [--opt o=size=64m], or\n" +
			"--opt type=none --opt o=bind --opt device=/path (a directory of the node).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			parsedOpts, err := parseLabels("--opt", opts)
			if err != nil {
				return err
			}
			parsedLabels, err := parseLabels("--label", labels)
			if err != nil {
				return err
			}
			spec := &api.VolumeSpec{Name: args[0], Driver: driver, Options: parsedOpts, Labels: parsedLabels}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Control.CreateVolume(ctx, &api.CreateVolumeRequest{Spec: spec})
				if err != nil {
					return mayHaveApplied(err, "jaco volume inspect "+args[0])
				}
				fmt.Fprintln(cmd.OutOrStdout(), resp.GetVolume().GetSpec().GetName())
				return nil
			})
		},
	}
	cmd.Flags().StringVarP(&driver, "driver", "d", api.LocalVolumeDriver, "volume driver (local is the only one)")
	cmd.Flags().StringArrayVarP(&opts, "opt", "o", nil, "driver option KEY=VALUE: type, device, o (repeatable)")
	cmd.Flags().StringArrayVar(&labels, "label", nil, "label KEY=VALUE (repeatable)")
	return cmd
}

// volumeView is a row of `jaco volume ls`.
type volumeView struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Driver string `json:"driver"`
	// Node is the hostname of the node the volume lives on ("" before
	// its first replica is placed; the id when the node is gone).
	Node   string `json:"node"`
	NodeID string `json:"node_id"`
}

func volumeLsCmd(g *globals) *cobra.Command {
	lf := listFlags{keys: map[string][]string{"id": nil, "name": nil, "node": nil}}
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List named volumes and the nodes they live on",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := lf.check(); err != nil {
				return err
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				consistency := g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LOCAL)
				vols, err := paging.Collect(func(tok string) ([]*api.Volume, string, error) {
					r, err := c.Control.ListVolumes(ctx, &api.ListVolumesRequest{PageToken: tok, Consistency: consistency})
					return r.GetVolumes(), r.GetNextPageToken(), err
				})
				if err != nil {
					return err
				}
				hostnames := map[string]string{}
				if slices.ContainsFunc(vols, func(v *api.Volume) bool { return v.GetNodeId() != "" }) {
					nodes, err := c.ListNodes(ctx, &api.ListNodesRequest{Consistency: consistency})
					if err != nil {
						return err
					}
					for _, n := range nodes {
						hostnames[n.GetId()] = n.GetHostname()
					}
				}
				views := make([]volumeView, 0, len(vols))
				for _, v := range vols {
					view := volumeView{ID: v.GetId(), Name: v.GetSpec().GetName(), Driver: v.GetSpec().GetDriver(), NodeID: v.GetNodeId()}
					if view.Node = hostnames[v.GetNodeId()]; view.Node == "" {
						view.Node = v.GetNodeId()
					}
					if lf.match("id", prefix(view.ID)) && lf.match("name", prefix(view.Name)) &&
						lf.match("node", func(f string) bool { return f == view.Node || f == view.NodeID }) {
						views = append(views, view)
					}
				}
				slices.SortFunc(views, func(a, b volumeView) int { return strings.Compare(a.Name, b.Name) })
				return writeList(cmd, &lf, views, func(v volumeView) string { return v.Name }, volumeTable)
			})
		},
	}
	lf.add(cmd, "id (prefix), name (prefix), node (hostname or id)")
	return cmd
}

func volumeTable(w io.Writer, views []volumeView) error {
	rows := make([][]string, len(views))
	for i, v := range views {
		node := v.Node
		if node == "" {
			node = "-"
		}
		rows[i] = []string{v.Name, v.Driver, node}
	}
	return table(w, "NAME\tDRIVER\tNODE", rows)
}

func volumeInspectCmd(g *globals) *cobra.Command {
	var out inspectFlags
	cmd := &cobra.Command{
		Use:   "inspect VOLUME",
		Short: "Show one volume, the node it lives on and the services naming it as JSON (--pretty for people)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Control.GetVolume(ctx, &api.GetVolumeRequest{Volume: args[0],
					Consistency: g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE)})
				if err != nil {
					return err
				}
				view, _ := protoView(resp.GetVolume()).(jsonObject)
				services := resp.GetServices()
				if services == nil {
					services = []string{}
				}
				view = append(view, jsonField{Key: "hostname", Value: resp.GetHostname()},
					jsonField{Key: "services", Value: services})
				return out.write(cmd.OutOrStdout(), view)
			})
		},
	}
	out.add(cmd)
	return cmd
}

func volumeRmCmd(g *globals) *cobra.Command {
	return rmCmd(g, "rm VOLUME...", "Remove volumes no service names and no replica uses; their node deletes the data",
		func(ctx context.Context, c *client.Client, name string) error {
			_, err := c.Control.RemoveVolume(ctx, &api.RemoveVolumeRequest{Volume: name})
			return err
		})
}
