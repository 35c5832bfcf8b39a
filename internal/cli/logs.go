package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// managerLabel selects gitsync's manager Pods (config/, the chart, bootstrap).
const managerLabel = "app.kubernetes.io/name"

func (o *options) newLogsCommand() *cobra.Command {
	var (
		file   string
		since  time.Duration
		follow bool
	)
	cmd := &cobra.Command{
		Use:   "logs app NAME",
		Short: "Print the operator's log lines about one Application (syncs, hooks, drift, failures)",
		Long: `Reads the log of gitsync's manager Pods (label app.kubernetes.io/name=gitsync, container
manager, any namespace you may read) and prints the lines about the Application NAME of
-n: one per sync, hook run, drift detected or corrected, and failure. --file reads a log
saved from ` + "`gitsync run`" + ` instead (its JSON lines).`,
		Example: `  gitsync logs app web -n team-a --since 1h
  gitsync logs app web -n team-a -f
  gitsync run ... > gitsync.log; gitsync logs app web -n team-a --file gitsync.log`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: o.completeAppName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != "app" && args[0] != "apps" && args[0] != "application" {
				return fmt.Errorf("logs takes an Application: gitsync logs app NAME")
			}
			ns, err := o.namespace()
			if err != nil {
				return err
			}
			match := func(line string) bool { return logAbout(line, ns, args[1]) }
			if file != "" {
				f, err := os.Open(file)
				if err != nil {
					return err
				}
				defer f.Close()
				return printLogLines(o.Out, f, match)
			}
			return o.podLogs(cmd.Context(), since, follow, match)
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "read this log file instead of the manager Pods' logs")
	cmd.Flags().DurationVar(&since, "since", 0, "only lines newer than this (e.g. 1h; 0: all the Pods' logs)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines")
	return cmd
}

// podLogs streams the manager Pods' logs through printLogLines.
func (o *options) podLogs(ctx context.Context, since time.Duration, follow bool, match func(string) bool) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.MatchingLabels{managerLabel: "gitsync"}); err != nil {
		return fmt.Errorf("listing gitsync's manager Pods: %w", err)
	}
	if len(pods.Items) == 0 {
		return fmt.Errorf("no gitsync manager Pod (label %s=gitsync) found: is the operator running in this cluster? (a local `gitsync run`: use --file)", managerLabel)
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	cfg, err := o.restConfig()
	if err != nil {
		return err
	}
	// The core/v1 client alone: client-go's Clientset would link every API group's
	// typed client into the binary, the operator's too.
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return err
	}
	opts := &corev1.PodLogOptions{Container: "manager", Follow: follow}
	if since > 0 {
		s := int64(since.Seconds())
		opts.SinceSeconds = &s
	}
	for _, pod := range pods.Items {
		stream, err := core.Pods(pod.Namespace).GetLogs(pod.Name, opts).Stream(ctx)
		if err != nil {
			return fmt.Errorf("reading the log of Pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		err = printLogLines(o.Out, stream, match)
		stream.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// logAbout tells whether a JSON log line of the operator is about the Application ns/name:
// controller-runtime puts the reconciled object in "Application" (also for the drift
// controller, keyed by Application).
func logAbout(line, ns, name string) bool {
	var l struct {
		Application *struct{ Name, Namespace string } `json:"Application"`
	}
	if json.Unmarshal([]byte(line), &l) != nil || l.Application == nil {
		return false
	}
	return l.Application.Name == name && l.Application.Namespace == ns
}

// printLogLines prints the lines of r that match, one per line: time, level, message,
// then the other fields as key=value (controller-runtime's bookkeeping left out).
func printLogLines(w io.Writer, r io.Reader, match func(string) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !match(line) {
			continue
		}
		var fields map[string]any
		if json.Unmarshal([]byte(line), &fields) != nil {
			continue
		}
		fmt.Fprintln(w, formatLogLine(fields))
	}
	return sc.Err()
}

// logBookkeeping are the fields every reconcile line carries.
var logBookkeeping = map[string]bool{"ts": true, "level": true, "msg": true, "controller": true, "controllerGroup": true,
	"controllerKind": true, "Application": true, "namespace": true, "name": true, "reconcileID": true, "logger": true}

func formatLogLine(fields map[string]any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v %-5v %v", fields["ts"], fields["level"], fields["msg"])
	keys := make([]string, 0, len(fields))
	for k := range fields {
		if !logBookkeeping[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := fields[k]
		if s, ok := v.(string); ok {
			fmt.Fprintf(&b, " %s=%s", k, s)
			continue
		}
		data, _ := json.Marshal(v)
		fmt.Fprintf(&b, " %s=%s", k, data)
	}
	return b.String()
}
