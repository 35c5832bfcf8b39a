package cli

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operations"
	"github.com/gitsync-dev/gitsync/internal/redact"
)

// wideColumns are -o wide's extra columns: where an object's content comes from.
func wideColumns(obj client.Object) (source, target string) {
	switch o := obj.(type) {
	case *gitsyncv1.Application:
		source = o.Spec.SourceRef.Kind + "/" + o.Spec.SourceRef.Name
		target = operations.PathOrDot(o.Spec.Path)
		if o.Spec.Helm != nil && o.Spec.Helm.Chart != "" {
			target = o.Spec.Helm.Chart
			if o.Spec.Helm.Version != "" {
				target += " " + o.Spec.Helm.Version
			}
		}
	case *gitsyncv1.GitRepository:
		source = redact.URL(o.Spec.URL)
		target = "-"
		if r := o.Spec.Ref; r != nil {
			for _, v := range []string{r.Branch, r.Tag, r.SemVer, r.Commit} {
				if v != "" {
					target = v
					break
				}
			}
		}
	case *gitsyncv1.HelmRepository:
		source, target = redact.URL(o.Spec.URL), "-"
	}
	return source, target
}

// printTable writes objs (listed as k) as a table. Applications have SYNC and HEALTH;
// sources have neither, and a listing of `sources` names each row KIND/NAME
// (gitrepository/NAME, helmrepository/NAME, as kubectl and flux name them) since it
// holds two kinds.
func printTable(w io.Writer, k kind, objs []client.Object, header, withNamespace, wide bool, now time.Time) {
	app := k == kindApp
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	if header {
		if withNamespace {
			fmt.Fprint(tw, "NAMESPACE\t")
		}
		if app {
			fmt.Fprint(tw, "NAME\tREADY\tSYNC\tHEALTH\tREVISION\tAGE\t")
		} else {
			fmt.Fprint(tw, "NAME\tREADY\tREVISION\tAGE\t")
		}
		if wide && app {
			fmt.Fprint(tw, "SOURCE\tTARGET\t")
		} else if wide {
			fmt.Fprint(tw, "URL\tREF\t")
		}
		fmt.Fprintln(tw, "MESSAGE")
	}
	for _, obj := range objs {
		r := rowOf(obj, now)
		if withNamespace {
			fmt.Fprintf(tw, "%s\t", r.Namespace)
		}
		if app {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t", r.Name, r.Ready, r.Sync, r.Health, r.Revision, r.Age)
		} else {
			fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t", k.namePrefix(obj), r.Name, r.Ready, r.Revision, r.Age)
		}
		if wide {
			source, target := wideColumns(obj)
			fmt.Fprintf(tw, "%s\t%s\t", source, target)
		}
		fmt.Fprintf(tw, "%s\n", r.Message)
	}
	tw.Flush()
}

// sortRows orders a listing of k as its table shows it: by namespace, then by the name
// the row shows (in a listing of sources, gitrepository/… before helmrepository/…).
func sortRows(k kind, objs []client.Object) {
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := objs[i], objs[j]
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return k.namePrefix(a)+a.GetName() < k.namePrefix(b)+b.GetName()
	})
}
