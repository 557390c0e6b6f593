package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/ca/token"
	"github.com/jaco-project/jaco/client"
)

func clusterCACmd(g *globals) *cobra.Command {
	var rotate bool
	var certFile, keyFile string
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "ca [--rotate [--cert-file FILE --key-file FILE]]",
		Short: "Show the cluster CA, or rotate it",
		Long: "Without flags: the fingerprint of the CA that signs node certificates (the one tokens pin),\n" +
			"and a rotation's progress. --rotate replaces the CA with a new one the cluster makes, or with\n" +
			"yours (--cert-file, --key-file: a PEM CA certificate and its PKCS #8 private key). Nodes first\n" +
			"learn to trust the new CA beside the old, then each gets a certificate of the new CA, then the old\n" +
			"one is trusted no more; no connection is closed for it. A node that is down holds the rotation\n" +
			"until it returns or is removed (jaco node remove).\n\n" +
			"The command waits until the rotation is done, printing each change; -d does not wait, and\n" +
			"Ctrl-C stops waiting and leaves the rotation running (jaco cluster status follows it).\n" +
			"Tokens keep their secrets but pin the CA: after a rotation, replace the fingerprint in saved\n" +
			"operator tokens (JACO1-<fingerprint>-<secret>) with the new one, and issue join tokens again.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !rotate && (certFile != "" || keyFile != "") {
				return errors.New("--cert-file and --key-file go with --rotate")
			}
			if (certFile == "") != (keyFile == "") {
				return errors.New("an external CA needs both --cert-file and --key-file")
			}
			req := &api.RotateCARequest{}
			if certFile != "" {
				var err error
				if req.CaCertPem, err = os.ReadFile(certFile); err != nil {
					return fmt.Errorf("--cert-file: %w", err)
				}
				if req.CaKeyPem, err = os.ReadFile(keyFile); err != nil {
					return fmt.Errorf("--key-file: %w", err)
				}
			}
			out := cmd.OutOrStdout()
			if !rotate {
				return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
					st, err := c.Cluster.Status(ctx, &api.ClusterStatusRequest{})
					if err != nil {
						return err
					}
					fmt.Fprintf(out, "CA fingerprint: %s\n", st.CaFingerprint)
					fmt.Fprintf(out, "CA rotation:    %s\n", rotationLine(toRotationView(st.CaRotation)))
					return nil
				})
			}
			var newFP string
			err := g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Control.RotateCA(ctx, req)
				if err != nil {
					return err
				}
				newFP = resp.Progress.GetNewCaFingerprint()
				if !wf.quiet {
					fmt.Fprintf(out, "CA rotation started: new CA %s.\n", newFP)
				}
				return nil
			})
			if err != nil || wf.detach {
				return err
			}
			w := out
			if wf.quiet {
				w = io.Discard
			}
			if err := g.stream(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				return waitRotated(ctx, c, newFP, w)
			}); err != nil {
				return err
			}
			if !wf.quiet {
				printRotatedTokens(out, newFP)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&rotate, "rotate", false, "rotate the cluster CA")
	cmd.Flags().StringVar(&certFile, "cert-file", "", "with --rotate: PEM certificate of the CA to rotate to (yours)")
	cmd.Flags().StringVar(&keyFile, "key-file", "", "with --rotate: PEM PKCS #8 private key of that CA")
	cmd.Flags().BoolVarP(&wf.detach, "detach", "d", false, "return once the rotation is started, without waiting for it")
	cmd.Flags().BoolVarP(&wf.quiet, "quiet", "q", false, "wait without printing progress")
	return cmd
}

// rotationPoll is how often the CLI reads a rotation's progress.
const rotationPoll = 500 * time.Millisecond

// waitRotated follows the rotation to newFP until the CA that signs is
// newFP and no rotation is under way, printing each change of progress.
func waitRotated(ctx context.Context, c *client.Client, newFP string, w io.Writer) error {
	last := ""
	for {
		st, err := c.Cluster.Status(ctx, &api.ClusterStatusRequest{})
		if err != nil {
			return err
		}
		if st.CaRotation == nil && st.CaFingerprint == newFP {
			fmt.Fprintln(w, "CA rotation done: every node's certificate is of the new CA, and the old CA is trusted no more.")
			return nil
		}
		if line := rotationLine(toRotationView(st.CaRotation)); st.CaRotation != nil && line != last {
			fmt.Fprintf(w, "CA rotation: %s\n", line)
			last = line
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(rotationPoll):
		}
	}
}

// rotationView is the JSON shape of a CA rotation's progress in `jaco
// cluster status --format json`.
type rotationView struct {
	Phase string `json:"phase"`
	Nodes uint32 `json:"nodes"`
	Done  uint32 `json:"done"`
	// Waiting are the hostnames of the nodes the phase waits for.
	Waiting          []string  `json:"waiting"`
	StartedAt        time.Time `json:"started_at"`
	NewCAFingerprint string    `json:"new_ca_fingerprint"`
}

func toRotationView(p *api.CARotationProgress) *rotationView {
	if p == nil {
		return nil
	}
	return &rotationView{Phase: p.Phase, Nodes: p.Nodes, Done: p.Done, Waiting: append([]string{}, p.Waiting...),
		StartedAt: p.StartedAt.AsTime(), NewCAFingerprint: p.NewCaFingerprint}
}

// rotationLine is a rotation's progress in words.
func rotationLine(p *rotationView) string {
	if p == nil {
		return "none"
	}
	what := map[string]string{"trust": "trust the new CA", "reissue": "reissued", "drop": "trust the new CA alone"}[p.Phase]
	line := fmt.Sprintf("%s: %d of %d nodes %s", p.Phase, p.Done, p.Nodes, what)
	if len(p.Waiting) > 0 {
		line += fmt.Sprintf(" (waiting for %s)", terminalSafe(strings.Join(p.Waiting, ", ")))
	}
	return line
}

// printRotatedTokens says what a rotation means for saved tokens, and
// rewrites the operator token this CLI was given, if any.
func printRotatedTokens(w io.Writer, newFP string) {
	fmt.Fprintf(w, "\nTokens pin the CA: operator tokens keep their secrets, now with the fingerprint %s;\n"+
		"join tokens issued before the rotation no longer work: issue new ones (jaco node issue-join-token).\n", newFP)
	if t, err := token.Parse(os.Getenv("JACO_TOKEN")); err == nil && t.CAFingerprint != newFP {
		t.CAFingerprint = newFP
		fmt.Fprintf(w, "Your operator token ($JACO_TOKEN) is now:\n\n    %s\n", t)
	}
}
