package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/client"
)

// eventTypes are the values of --filter type=, as the manager names them.
var eventTypes = []string{"node", "service", "task", "cluster", "secret", "config", "network", "volume"}

func eventsCmd(g *globals) *cobra.Command {
	var (
		since   sinceValue
		format  string
		filters []string
	)
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Stream the changes the cluster commits, as the manager asked applies them",
		Long: "Stream the changes the cluster commits: objects created, updated and removed, and the state\n" +
			"changes of replicas and nodes with their reason, one line each, as the manager asked applies\n" +
			"them; any manager answers from its own store. --since first replays what that manager holds\n" +
			"(the last 10 000 events, the last hour at most, since it started); when it holds less than\n" +
			"asked, a warning on stderr says from when. Event times are when that manager applied the\n" +
			"change. Runs until Ctrl-C.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "table" && format != "json" {
				return fmt.Errorf("--format must be table or json, not %q", format)
			}
			parsed, err := parseFilters(filters, map[string][]string{"type": eventTypes, "service": nil, "node": nil})
			if err != nil {
				return err
			}
			req := &api.WatchEventsRequest{Types: parsed["type"], Services: parsed["service"], Nodes: parsed["node"]}
			if !since.t.IsZero() {
				req.Since = timestamppb.New(since.t)
			}
			return g.stream(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				stream, err := c.Control.WatchEvents(ctx, req)
				if err != nil {
					return err
				}
				return printEvents(cmd.OutOrStdout(), cmd.ErrOrStderr(), format == "json", stream.Recv)
			})
		},
	}
	cmd.Flags().Var(&since, "since", "first replay the events applied since then: a duration back from now (10m, 1h30m) or a time (2026-11-25T06:00:00Z)")
	cmd.Flags().StringVar(&format, "format", "table", "output format: table (one line per event) or json (one JSON object per line)")
	cmd.Flags().StringArrayVarP(&filters, "filter", "f", nil, "show only events matching KEY=VALUE (repeatable: values of one key are alternatives, "+
		"different keys must all match); keys: type ("+strings.Join(eventTypes, ", ")+"), service (name or id: the service and its replicas), "+
		"node (hostname or id: the node and the replicas on it)")
	return cmd
}

// printEvents prints each event received until the stream ends, as a line
// or, with asJSON, as a JSON object per line; gaps in the stream are
// warnings on errw, so stdout holds nothing but events.
func printEvents(w, errw io.Writer, asJSON bool, recv func() (*api.WatchEventsMessage, error)) error {
	for {
		m, err := recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if gap := m.GetGap(); gap != nil {
			fmt.Fprintf(errw, "warning: %s\n", terminalSafe(gap.GetMessage()))
		}
		for _, e := range m.GetEvents() {
			if !asJSON {
				fmt.Fprintln(w, terminalSafe(eventLine(e)))
				continue
			}
			b, err := json.Marshal(protoView(e))
			if err != nil {
				return fmt.Errorf("event %d as JSON: %w", e.GetSequence(), err)
			}
			fmt.Fprintf(w, "%s\n", b)
		}
	}
}

// eventLine is an event as one line:
//
//	TIME TYPE ACTION NAME (id ID) [FROM→TO] [FIELD FROM→TO ...] [reason=WORD] [message="..."]
func eventLine(e *api.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", e.GetTime().AsTime().UTC().Format(time.RFC3339), e.GetType(), e.GetAction())
	if e.GetName() != "" {
		fmt.Fprintf(&b, " %s", e.GetName())
	}
	if e.GetId() != "" {
		fmt.Fprintf(&b, " (id %s)", e.GetId())
	}
	switch {
	case e.GetFrom() != "":
		fmt.Fprintf(&b, " %s→%s", e.GetFrom(), e.GetTo())
	case e.GetTo() != "":
		fmt.Fprintf(&b, " %s", e.GetTo())
	}
	for _, c := range e.GetChanges() {
		fmt.Fprintf(&b, " %s %s→%s", c.GetField(), orDash(c.GetFrom()), orDash(c.GetTo()))
	}
	if e.GetReason() != "" {
		fmt.Fprintf(&b, " reason=%s", e.GetReason())
	}
	if e.GetMessage() != "" {
		fmt.Fprintf(&b, " message=%q", e.GetMessage())
	}
	return b.String()
}
