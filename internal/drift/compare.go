package drift

import (
	"context"
	"fmt"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Comparer reads one object as it is in the cluster (live; nil when it does not exist)
// and as applying Git's version would make it (desired: a server-side dry-run), as
// apply.Manager.Compare does.
type Comparer interface {
	Compare(ctx context.Context, obj *unstructured.Unstructured) (live, desired *unstructured.Unstructured, err error)
}

// Outcome is what a sync would do to one object: the one compare that drift detection,
// `gitsync diff`, the web UI and previews share.
type Outcome struct {
	// Subject names the object ("Kind/namespace/name").
	Subject string
	// Action is "created" (it does not exist), "configured" (Git changes Fields) or
	// "unchanged".
	Action string
	Fields []Field
	// Live and Desired are the two sides as read and dry-run (Live nil when created).
	Live, Desired *unstructured.Unstructured
}

// Outcome actions.
const (
	Created    = "created"
	Configured = "configured"
	Unchanged  = "unchanged"
)

// CompareObject compares obj (Git's version) with the cluster through c and diffs the
// fields gitsync manages, leaving out those at ignore (spec.ignoreDifferences). The
// Comparer's error comes back as it is.
func CompareObject(ctx context.Context, c Comparer, subject string, obj *unstructured.Unstructured, ignore []string) (*Outcome, error) {
	live, desired, err := c.Compare(ctx, obj)
	if err != nil {
		return nil, err
	}
	out := &Outcome{Subject: subject, Live: live, Desired: desired, Action: Created}
	if live == nil {
		return out, nil
	}
	fields, err := Diff(live, desired, ignore)
	if err != nil {
		return nil, fmt.Errorf("comparing %s: %w", subject, err)
	}
	out.Fields, out.Action = fields, Unchanged
	if len(fields) > 0 {
		out.Action = Configured
	}
	return out, nil
}

// Display returns the two sides for people: without status, managedFields and the
// ignored fields, Secret values masked (a value Git changes as "*** (changed)"). git is
// the dry-run result when the object exists, else obj itself; live is nil when created.
func (o *Outcome) Display(obj *unstructured.Unstructured, ignore []string) (live, git *unstructured.Unstructured) {
	if o.Live == nil {
		git = ForDisplay(obj, ignore)
		MaskSecret(git, nil)
		return nil, git
	}
	live, git = ForDisplay(o.Live, ignore), ForDisplay(o.Desired, ignore)
	MaskSecret(git, live) // against live's values, before live is masked
	MaskSecret(live, nil)
	return live, git
}

// Shown is an outcome as people see it: both sides as YAML, Secret values masked, and
// for a configured object the unified diff from live to git.
type Shown struct {
	Live, Git, Diff string
}

// Show renders the outcome of obj (Git's version) for people (see Display), once.
func (o *Outcome) Show(obj *unstructured.Unstructured, ignore []string) (Shown, error) {
	var shown Shown
	live, git := o.Display(obj, ignore)
	if live != nil {
		b, err := yaml.Marshal(live.Object)
		if err != nil {
			return shown, fmt.Errorf("encoding %s: %w", o.Subject, err)
		}
		shown.Live = string(b)
	}
	b, err := yaml.Marshal(git.Object)
	if err != nil {
		return shown, fmt.Errorf("encoding %s: %w", o.Subject, err)
	}
	shown.Git = string(b)
	if o.Action == Configured {
		shown.Diff, err = difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(shown.Live), B: difflib.SplitLines(shown.Git),
			FromFile: "live", ToFile: "git", Context: 3,
		})
		if err != nil {
			return shown, fmt.Errorf("comparing %s: %w", o.Subject, err)
		}
	}
	return shown, nil
}

// UnifiedDiff is a unified YAML diff of the two sides of a configured object (live →
// git), Secret values masked; "" for an object that is created or unchanged.
func (o *Outcome) UnifiedDiff(ignore []string) (string, error) {
	if o.Action != Configured {
		return "", nil
	}
	shown, err := o.Show(nil, ignore)
	return shown.Diff, err
}
