package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operations"
	"github.com/gitsync-dev/gitsync/internal/redact"
)

// wideColumns are -o wide's extra columns: where an object's content comes from.
func wideColumns(obj client.Object) (source, target string) {
	switch o := obj.(type) {
	case *gitsyncv1.Application:
		source = operations.SourceSummary(o)
		var targets []string
		for _, src := range o.SourceList() {
			t := operations.PathOrDot(src.Path)
			if src.Helm != nil && src.Helm.Chart != "" {
				t = src.Helm.Chart
				if src.Helm.Version != "" {
					t += " " + src.Helm.Version
				}
			}
			targets = append(targets, t)
		}
		target = strings.Join(targets, ",")
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
	case *gitsyncv1.OCIRepository:
		source, target = o.Spec.URL, "latest"
		if r := o.Spec.Ref; r != nil {
			for _, v := range []string{r.Digest, r.SemVer, r.Tag} {
				if v != "" {
					target = v
					break
				}
			}
		}
	}
	return source, target
}

// printTable writes objs (listed as k) as a table. Applications have SYNC and HEALTH;
// sources have neither, and a listing of `sources` names each row KIND/NAME
// (gitrepository/NAME, helmrepository/NAME, as kubectl and flux name them) since it
// holds two kinds.
//
// A WINDOW column (after REVISION) is there when one of the Applications has
// spec.syncWindows.
func printTable(w io.Writer, k kind, objs []client.Object, header, withNamespace, wide bool, now time.Time) {
	app := k == kindApp
	windows := app && hasWindows(objs)
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	if header {
		if withNamespace {
			fmt.Fprint(tw, "NAMESPACE\t")
		}
		if windows {
			fmt.Fprint(tw, "NAME\tREADY\tSYNC\tHEALTH\tREVISION\tWINDOW\tAGE\t")
		} else if app {
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
		if windows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t", r.Name, r.Ready, r.Sync, r.Health, r.Revision, r.Window, r.Age)
		} else if app {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t", r.Name, r.Ready, r.Sync, r.Health, r.Revision, r.Age)
		} else {
			fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t", k.namePrefix(obj), r.Name, r.Ready, r.Revision, r.Age)
		}
		if wide {
			source, target := wideColumns(obj)
			fmt.Fprintf(tw, "%s\t%s\t", source, target)
		}
		fmt.Fprintf(tw, "%s\n", messageCell(r.Message))
	}
	tw.Flush()
}

// messageCellWidth is the most characters of a message's first line the MESSAGE column
// shows.
const messageCellWidth = 100

// messageCell is the MESSAGE column of a message: its first line, cut to
// messageCellWidth characters with "…", and "(+N lines)" when it has more lines (-o yaml
// or json shows all of it). A multi-line message (one line per failed object) would
// otherwise break the table.
func messageCell(msg string) string {
	msg = strings.TrimRight(msg, "\n")
	first, rest, more := strings.Cut(msg, "\n")
	first = strings.ReplaceAll(first, "\t", " ")
	if runes := []rune(first); len(runes) > messageCellWidth {
		first = string(runes[:messageCellWidth-1]) + "…"
	}
	if more {
		first += fmt.Sprintf(" (+%d lines)", strings.Count(rest, "\n")+1)
	}
	return first
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

// hasWindows tells whether one of the listed Applications has sync windows.
func hasWindows(objs []client.Object) bool {
	for _, obj := range objs {
		if a, ok := obj.(*gitsyncv1.Application); ok && (len(a.Spec.SyncWindows) > 0 || a.Status.SyncWindow != nil) {
			return true
		}
	}
	return false
}

// windowCell is the WINDOW column: Open or Closed, and for how long more ("Closed(47m)"),
// "-" without windows.
func windowCell(w *gitsyncv1.SyncWindowStatus, now time.Time) string {
	if w == nil {
		return "-"
	}
	if w.Until == nil || !w.Until.After(now) {
		return w.State
	}
	return w.State + "(" + duration.HumanDuration(w.Until.Sub(now)) + ")"
}
