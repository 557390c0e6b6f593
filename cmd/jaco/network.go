package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/ipam"
	"github.com/jaco-project/jaco/client"
)

func networkCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "network", Short: "Manage overlay networks (services attach with --network)"}
	cmd.AddCommand(networkCreateCmd(g), networkLsCmd(g), networkInspectCmd(g), networkRmCmd(g))
	return cmd
}

func networkCreateCmd(g *globals) *cobra.Command {
	var subnet string
	var labels []string
	cmd := &cobra.Command{
		Use:   "create [--subnet CIDR] [--label K=V] NAME",
		Short: "Create an overlay network; its subnet is given or taken from the cluster's overlay pool",
		Long: "Create an overlay network; its subnet is given or taken from the cluster's overlay pool.\n" +
			"The name ingress is the routing mesh's: the cluster makes that network with the first service\n" +
			"publishing a port through the mesh (-p PUBLISHED:TARGET); network rm ingress is refused while one does.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			parsed, err := parseLabels("--label", labels)
			if err != nil {
				return err
			}
			spec := &api.NetworkSpec{Name: args[0], Subnet: subnet, Labels: parsed}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Control.CreateNetwork(ctx, &api.CreateNetworkRequest{Spec: spec})
				if err != nil {
					return mayHaveApplied(err, "jaco network inspect "+args[0])
				}
				fmt.Fprintln(cmd.OutOrStdout(), resp.Network.Id)
				return nil
			})
		},
	}
	cmd.Flags().Var(&checkedString{&subnet, func(s string) error { _, err := ipam.ParseSubnet(s); return err }}, "subnet",
		"IPv4 CIDR of the network, /8 to /24, overlapping no other network's (default: the next free one of the overlay pool)")
	cmd.Flags().StringArrayVar(&labels, "label", nil, "label KEY=VALUE (repeatable; stack deploy sets "+api.StackLabel+")")
	return cmd
}

// networkView is a row of `jaco network ls`.
type networkView struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Subnet string `json:"subnet"`
}

func networkLsCmd(g *globals) *cobra.Command {
	lf := listFlags{keys: map[string][]string{"id": nil, "name": nil}}
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List overlay networks",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := lf.check(); err != nil {
				return err
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Control.ListNetworks(ctx, &api.ListNetworksRequest{
					Consistency: g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LOCAL)})
				if err != nil {
					return err
				}
				views := make([]networkView, 0, len(resp.Networks))
				for _, n := range resp.Networks {
					v := networkView{ID: n.Id, Name: n.GetSpec().GetName(), Subnet: n.GetSpec().GetSubnet()}
					if lf.match("id", prefix(v.ID)) && lf.match("name", prefix(v.Name)) {
						views = append(views, v)
					}
				}
				return writeList(cmd, &lf, views, func(v networkView) string { return v.ID }, networkTable)
			})
		},
	}
	lf.add(cmd, "id (prefix), name (prefix)")
	return cmd
}

func networkTable(w io.Writer, views []networkView) error {
	rows := make([][]string, len(views))
	for i, v := range views {
		rows[i] = []string{v.ID, v.Name, v.Subnet}
	}
	return table(w, "ID\tNAME\tSUBNET", rows)
}

func networkInspectCmd(g *globals) *cobra.Command {
	var out inspectFlags
	cmd := &cobra.Command{
		Use:   "inspect NETWORK",
		Short: "Show one network and the services attached to it as JSON (--pretty for people)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Control.GetNetwork(ctx, &api.GetNetworkRequest{Network: args[0],
					Consistency: g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE)})
				if err != nil {
					return err
				}
				view, _ := protoView(resp.Network).(jsonObject)
				services := resp.Services
				if services == nil {
					services = []string{}
				}
				// Handshakes are the answering node's to tell: its link's view
				// of each peer. A node running no agent has none to add.
				local, _ := c.Agent.OverlayStatus(ctx, &api.OverlayStatusRequest{})
				view = append(view, jsonField{Key: "services", Value: services},
					jsonField{Key: "peers", Value: networkPeerViews(resp.Peers, local)})
				return out.write(cmd.OutOrStdout(), view)
			})
		},
	}
	out.add(cmd)
	return cmd
}

func networkRmCmd(g *globals) *cobra.Command {
	return rmCmd(g, "rm NETWORK...", "Remove networks no service uses",
		func(ctx context.Context, c *client.Client, name string) error {
			_, err := c.Control.RemoveNetwork(ctx, &api.RemoveNetworkRequest{Network: name})
			return err
		})
}

// networkPeerView is one node holding a block of a network, with the last
// handshake the answering node's link had with it ("" before any, or for
// the answering node itself).
type networkPeerView struct {
	NodeID         string `json:"node_id"`
	Hostname       string `json:"hostname"`
	Block          string `json:"block"`
	Endpoint       string `json:"endpoint"`
	OverlayMessage string `json:"overlay_message"`
	LastHandshake  string `json:"last_handshake"`
}

func networkPeerViews(peers []*api.NetworkPeer, local *api.OverlayStatusResponse) []networkPeerView {
	handshakes := map[string]string{}
	for _, p := range viewOverlay(local).Peers {
		handshakes[p.NodeID] = p.LastHandshake
	}
	out := make([]networkPeerView, 0, len(peers))
	for _, p := range peers {
		out = append(out, networkPeerView{NodeID: p.GetNodeId(), Hostname: p.GetHostname(), Block: p.GetBlock(),
			Endpoint: p.GetEndpoint(), OverlayMessage: p.GetOverlayMessage(), LastHandshake: handshakes[p.GetNodeId()]})
	}
	return out
}

// parseLabels reads repeated KEY=VALUE flag values (flag names the flag
// in the error); nil when there are none.
func parseLabels(flag string, values []string) (map[string]string, error) {
	var labels map[string]string
	for _, l := range values {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return nil, fmt.Errorf("%s %q: want KEY=VALUE", flag, l)
		}
		if labels == nil {
			labels = map[string]string{}
		}
		labels[k] = v
	}
	return labels, nil
}
