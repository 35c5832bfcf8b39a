package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitsync-dev/gitsync/internal/operations"
)

// runSource diffs every Application on the GitRepository name at --revision
// (operations.DiffSourceAt): the table of counts a pull-request preview comments, then
// each Application's diff or error. An Application that fails makes the command fail
// (exit 2) after everything is printed; else it reports whether anything changes.
func (d *diffOptions) runSource(ctx context.Context, name string) (bool, error) {
	if d.revision == "" {
		return false, fmt.Errorf("diff source needs --revision SHA|BRANCH (what to compare with the cluster)")
	}
	if d.path != "" || d.decrypt {
		return false, fmt.Errorf("diff source takes --revision, not --path or --decrypt")
	}
	c, err := d.client()
	if err != nil {
		return false, err
	}
	ns, err := d.namespace()
	if err != nil {
		return false, err
	}
	cfg, err := d.restConfig()
	if err != nil {
		return false, err
	}
	diffs, revision, err := operations.DiffSourceAt(ctx, cfg, c, client.ObjectKey{Namespace: ns, Name: name}, d.revision, d.lookup)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(d.Out, "GitRepository %s/%s, revision %s\n", ns, name, revision)
	if len(diffs) == 0 {
		fmt.Fprintln(d.Out, "no Application uses this source")
		return false, nil
	}
	tw := tabwriter.NewWriter(d.Out, 0, 4, 3, ' ', 0)
	for _, row := range operations.Table(diffs) {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	_ = tw.Flush()
	changes, failed := false, []string{}
	for _, ad := range diffs {
		fmt.Fprintln(d.Out)
		if ad.Err != nil {
			fmt.Fprintf(d.Out, "Application %s: %v\n", ad.Name(), ad.Err)
			failed = append(failed, ad.Name())
			continue
		}
		fmt.Fprint(d.Out, ad.Diff.Report())
		if ad.Failed() {
			failed = append(failed, ad.Name())
		}
		changes = changes || ad.Changes()
	}
	if len(failed) > 0 {
		return changes, fmt.Errorf("%d of %d Applications would fail: %s", len(failed), len(diffs), strings.Join(failed, ", "))
	}
	return changes, nil
}
