package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operations"
)

// getApp reads the Application NAME of `VERB app NAME`.
func (o *options) getApp(ctx context.Context, args []string, verb string) (client.WithWatch, *gitsyncv1.Application, error) {
	if k, err := parseKind(args[0]); err != nil || k != kindApp {
		return nil, nil, fmt.Errorf("%s works on apps: gitsync %s app NAME", verb, verb)
	}
	return o.readApp(ctx, "", args[1])
}

// readApp reads the Application ns/name (ns "": the kubeconfig's namespace).
func (o *options) readApp(ctx context.Context, ns, name string) (client.WithWatch, *gitsyncv1.Application, error) {
	c, err := o.client()
	if err != nil {
		return nil, nil, err
	}
	if ns == "" {
		if ns, err = o.namespace(); err != nil {
			return nil, nil, err
		}
	}
	app := &gitsyncv1.Application{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, app); err != nil {
		return nil, nil, notFoundOr(err, kindApp, ns, name)
	}
	return c, app, nil
}

func (o *options) newHistoryCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:               "history app NAME [-o table|json|yaml]",
		Short:             "Show an Application's last syncs (status.history), newest first",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeAppName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "table" && output != "json" && output != "yaml" {
				return fmt.Errorf("--output %q: use table, json or yaml", output)
			}
			_, app, err := o.getApp(cmd.Context(), args, "history")
			if err != nil {
				return err
			}
			if output != "table" {
				history := app.Status.History
				if history == nil {
					history = []gitsyncv1.SyncHistoryEntry{}
				}
				return printData(o.Out, output, map[string]any{"application": app.Namespace + "/" + app.Name, "history": history})
			}
			if len(app.Status.History) == 0 {
				fmt.Fprintf(o.ErrOut, "Application %s/%s has no sync history yet.\n", app.Namespace, app.Name)
				return nil
			}
			tw := tabwriter.NewWriter(o.Out, 0, 4, 3, ' ', 0)
			fmt.Fprintln(tw, "REVISION\tRESULT\tSTARTED\tDURATION\tCREATED\tCONFIGURED\tUNCHANGED\tPRUNED\tMESSAGE")
			now := time.Now()
			for _, h := range app.Status.History {
				took := "-"
				if h.FinishedAt != nil {
					took = h.FinishedAt.Sub(h.StartedAt.Time).Round(time.Millisecond).String()
				}
				fmt.Fprintf(tw, "%s\t%s\t%s ago\t%s\t%d\t%d\t%d\t%d\t%s\n", h.Revision, h.Result,
					duration.HumanDuration(now.Sub(h.StartedAt.Time)), took, h.Created, h.Configured, h.Unchanged, h.Pruned, h.Message)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	return cmd
}

// printData writes v as indented JSON or as YAML.
func printData(w io.Writer, format string, v any) error {
	if format == "yaml" {
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (o *options) newEventsCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "events app NAME",
		Short:             "Show the events of an Application and of the objects it applied, newest last",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeAppName,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, app, err := o.getApp(ctx, args, "events")
			if err != nil {
				return err
			}
			all, err := operations.Events(ctx, c, app)
			if err != nil {
				return err
			}
			if len(all) == 0 {
				fmt.Fprintf(o.ErrOut, "No events for Application %s/%s.\n", app.Namespace, app.Name)
				return nil
			}
			tw := tabwriter.NewWriter(o.Out, 0, 4, 3, ' ', 0)
			fmt.Fprintln(tw, "LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
			now := time.Now()
			for _, e := range all {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", duration.HumanDuration(now.Sub(e.Time)), e.Type, e.Reason,
					e.Object, strings.ReplaceAll(e.Message, "\n", "; "))
			}
			return tw.Flush()
		},
	}
}
