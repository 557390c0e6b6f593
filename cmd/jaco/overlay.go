package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/client"
)

// overlayView is `jaco overlay --format json`.
type overlayView struct {
	Kind        string            `json:"kind"`
	PublicKey   string            `json:"public_key"`
	Port        uint32            `json:"port"`
	Unavailable bool              `json:"unavailable"`
	Message     string            `json:"message"`
	Addresses   []string          `json:"addresses"`
	Peers       []overlayPeerView `json:"peers"`
}

type overlayPeerView struct {
	NodeID    string   `json:"node_id"`
	PublicKey string   `json:"public_key"`
	Endpoint  string   `json:"endpoint"`
	Allowed   []string `json:"allowed"`
	// LastHandshake is RFC 3339, empty before the first.
	LastHandshake string `json:"last_handshake"`
	RxBytes       int64  `json:"rx_bytes"`
	TxBytes       int64  `json:"tx_bytes"`
}

func overlayCmd(g *globals) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "overlay",
		Short: "Show this node's overlay link: its key, addresses and peers with their last handshakes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Agent.OverlayStatus(ctx, &api.OverlayStatusRequest{})
				if err != nil {
					return err
				}
				v := viewOverlay(resp)
				if ok, err := writeAs(cmd.OutOrStdout(), format, v); ok {
					return err
				}
				return writeOverlay(cmd, v)
			})
		},
	}
	formatFlag(cmd, &format)
	return cmd
}

func viewOverlay(resp *api.OverlayStatusResponse) overlayView {
	e := resp.GetEndpoint()
	v := overlayView{Kind: e.GetKind(), Port: e.GetPort(), Unavailable: e.GetUnavailable(), Message: e.GetMessage(),
		Addresses: append([]string{}, resp.GetAddresses()...), Peers: []overlayPeerView{}}
	if len(e.GetPublicKey()) > 0 {
		v.PublicKey = base64.StdEncoding.EncodeToString(e.GetPublicKey())
	}
	for _, p := range resp.GetPeers() {
		pv := overlayPeerView{NodeID: p.GetNodeId(), PublicKey: base64.StdEncoding.EncodeToString(p.GetPublicKey()),
			Endpoint: p.GetEndpoint(), Allowed: append([]string{}, p.GetAllowed()...), RxBytes: p.GetRxBytes(), TxBytes: p.GetTxBytes()}
		if p.GetLastHandshake() != nil {
			pv.LastHandshake = p.GetLastHandshake().AsTime().UTC().Format(time.RFC3339)
		}
		v.Peers = append(v.Peers, pv)
	}
	return v
}

func writeOverlay(cmd *cobra.Command, v overlayView) error {
	out := cmd.OutOrStdout()
	if v.Unavailable {
		fmt.Fprintf(out, "Overlay: unavailable: %s\n", terminalSafe(v.Message))
		return nil
	}
	addrs := strings.Join(v.Addresses, ", ")
	if addrs == "" {
		addrs = "none (no replica on a network here yet)"
	}
	fmt.Fprintf(out, "Overlay: %s WireGuard, port %d, key %s\nAddresses: %s\n\n", v.Kind, v.Port, v.PublicKey, addrs)
	rows := make([][]string, len(v.Peers))
	for i, p := range v.Peers {
		hs := "never"
		if t, err := time.Parse(time.RFC3339, p.LastHandshake); err == nil {
			hs = time.Since(t).Round(time.Second).String() + " ago"
		}
		rows[i] = []string{p.NodeID, p.Endpoint, strings.Join(p.Allowed, ","), hs, fmt.Sprint(p.RxBytes), fmt.Sprint(p.TxBytes)}
	}
	return table(out, "PEER\tENDPOINT\tALLOWED\tHANDSHAKE\tRX\tTX", rows)
}
