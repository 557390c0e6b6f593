// Command jaco is the operator's CLI for a jaco cluster.
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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/client"
	"github.com/jaco-project/jaco/internal/buildinfo"
	"github.com/jaco-project/jaco/internal/datadir"
)

// globals are the flags every command takes.
type globals struct {
	dataDir string
	server  string
	timeout time.Duration
	// consistency is --consistency: "" leaves each read its command's
	// default (readConsistency).
	consistency string
}

// Values of --consistency (docs/adr/0018-read-consistency.md).
var consistencies = map[string]api.ReadConsistency{
	"local":        api.ReadConsistency_READ_CONSISTENCY_LOCAL,
	"linearizable": api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE,
}

// readConsistency is the consistency of a read: --consistency when given,
// else def, the command's own.
func (g *globals) readConsistency(def api.ReadConsistency) api.ReadConsistency {
	if c, ok := consistencies[g.consistency]; ok {
		return c
	}
	return def
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	g := &globals{}
	root := &cobra.Command{
		Use:   "jaco",
		Short: "Operate a jaco cluster",
		Long: "Operate a jaco cluster.\n\n" +
			"A command that fails prints \"error: <reason>: <sentence>\" and exits 1, 2 for a usage mistake;\n" +
			"the reason words are stable (docs/design.md §11). A call refused with no_leader was not carried\n" +
			"out and is retried until --timeout. A write answered outcome_unknown is not retried: it may have\n" +
			"been applied, so look (jaco service inspect NAME, jaco node inspect NODE) before running it again.",
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if _, ok := consistencies[g.consistency]; g.consistency != "" && !ok {
				return fmt.Errorf("--consistency %q: want local or linearizable", g.consistency)
			}
			return nil
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.dataDir, "data-dir", envOr("JACO_DATA_DIR", datadir.Default), "data dir of the local daemon, whose socket is used ($JACO_DATA_DIR)")
	pf.StringVar(&g.server, "server", os.Getenv("JACO_SERVER"), "HOST[:PORT] of a daemon to reach over TCP, with $JACO_TOKEN; the port defaults to 7000, an IPv6 address may be bare (::1) or in brackets ([::1]:7000) ($JACO_SERVER)")
	pf.DurationVar(&g.timeout, "timeout", 30*time.Second, "give up on a call after this long (calls refused with no_leader are retried until then; a write answered outcome_unknown is not, it may have been applied)")
	pf.StringVar(&g.consistency, "consistency", "", "how current a read must be: local (the store of the daemon asked: fast, and answers without a leader) "+
		"or linearizable (holds every write acknowledged before it). Default: linearizable for inspect and the read before an update, local for ls, ps and status")
	root.AddCommand(clusterCmd(g), nodeCmd(g), serviceCmd(g), stackCmd(g), launchCmd(g), networkCmd(g), volumeCmd(g), secretCmd(g), configCmd(g), overlayCmd(g), imageCmd(g), statusCmd(g), eventsCmd(g), dashboardCmd(g), backupCmd(g), restoreCmd(g), versionCmd())
	root.Version = buildinfo.Read().Format("jaco")
	root.SetVersionTemplate("{{.Version}}")
	refuseUnknownSubcommands(root)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var code exitStatus
	if errors.As(err, &code) {
		return int(code)
	}
	var f failure
	if errors.As(err, &f) {
		printFailure(stderr, f.error)
		return 1
	}
	// Everything else is how the command was called: unknown commands and
	// flags, wrong arguments, a bad --format.
	fmt.Fprintf(stderr, "error: usage: %v\n", err)
	return 2
}

// refuseUnknownSubcommands makes every group command (one that only holds
// subcommands: jaco, jaco service, ...) refuse a word that names none of
// them as a usage error. Left alone, cobra prints the group's help and
// exits 0 for `jaco service lss`, so a script's typo would pass as success.
// A group given no word still prints its help.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if cmd.SuggestionsMinimumDistance <= 0 {
			cmd.SuggestionsMinimumDistance = 2 // cobra's own default
		}
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += " (did you mean " + strings.Join(s, " or ") + "?)"
		}
		return errors.New(msg)
	}
}

// failure is an error of what a command did, not of how it was called:
// a call the daemon refused or that failed, a file that could not be read
// or written. It exits 1; every other error is a usage mistake (2).
type failure struct{ error }

// exitStatus is the exit status of a program a command ran (jacod
// restore), which said why itself: jaco exits with it and adds nothing.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// printFailure writes "error: <reason>: <sentence>". The sentence may
// quote what the cluster stores or a client sent (a name, a spec field),
// so it is printed terminalSafe.
func printFailure(w io.Writer, err error) {
	fmt.Fprintf(w, "error: %s\n", terminalSafe(describe(err)))
}

// describe renders "<reason>: <sentence>", and for outcome_unknown what
// to do about it.
func describe(err error) string {
	if w := reason.Of(err); w != "" {
		var c checkWith
		if errors.As(err, &c) {
			err = c.error // the status's sentence, not the wrapper's text
		}
		if w == reason.OutcomeUnknown {
			return w + ": " + reason.Sentence(err) + "; " + outcomeAdvice(c.command)
		}
		return w + ": " + reason.Sentence(err)
	}
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.Unavailable:
			return reason.Unavailable + ": cannot reach jacod: " + st.Message()
		case codes.DeadlineExceeded:
			return reason.Unavailable + ": no answer from jacod in time: " + st.Message()
		}
		return st.Code().String() + ": " + st.Message()
	}
	return err.Error()
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// call runs fn against the daemon the globals name, within the timeout.
func (g *globals) call(ctx context.Context, fn func(ctx context.Context, c *client.Client) error) error {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	return g.stream(ctx, fn)
}

// stream runs fn against the daemon the globals name, for as long as it
// takes (following logs, uploading an image).
func (g *globals) stream(ctx context.Context, fn func(ctx context.Context, c *client.Client) error) error {
	var opt client.Option
	if g.server != "" {
		// Checked here, not by client.New, so that the message names
		// the flag; a bad address is a usage mistake (exit 2).
		addr, err := client.ServerAddr(g.server)
		if err != nil {
			return fmt.Errorf("--server: %w", err)
		}
		opt = client.WithServer(addr, os.Getenv("JACO_TOKEN"))
	} else {
		opt = client.WithSocket(datadir.Dir(g.dataDir).Socket())
	}
	c, err := client.New(opt)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := fn(ctx, c); err != nil {
		return failure{err}
	}
	return nil
}
