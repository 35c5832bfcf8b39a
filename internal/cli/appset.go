package cli

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gitsync-dev/gitsync/internal/operations"
)

// isAppSet tells whether the kind argument names an ApplicationSet.
func isAppSet(k string) bool {
	switch strings.ToLower(k) {
	case "appset", "appsets", "gsappset", "gsappsets", "applicationset", "applicationsets":
		return true
	}
	return false
}

func (o *options) appSetKey(name string) (client.Client, client.ObjectKey, error) {
	c, err := o.client()
	if err != nil {
		return nil, client.ObjectKey{}, err
	}
	ns, err := o.namespace()
	if err != nil {
		return nil, client.ObjectKey{}, err
	}
	return c, client.ObjectKey{Namespace: ns, Name: name}, nil
}

// buildAppSet prints the Applications the set generates now, as YAML documents.
func (o *options) buildAppSet(ctx context.Context, name string) error {
	c, key, err := o.appSetKey(name)
	if err != nil {
		return err
	}
	_, apps, err := operations.GenerateAppSet(ctx, c, key)
	if err != nil {
		return err
	}
	for i, a := range apps {
		out, err := yaml.Marshal(a)
		if err != nil {
			return fmt.Errorf("encoding Application %s: %w", a.Name, err)
		}
		if i > 0 {
			fmt.Fprintln(o.Out, "---")
		}
		fmt.Fprint(o.Out, strings.Replace(string(out), "status: {}\n", "", 1))
	}
	return nil
}

// diffAppSet prints what the set's controller would create, change and remove now, and
// says whether anything would change.
func (o *options) diffAppSet(ctx context.Context, name string) (bool, error) {
	c, key, err := o.appSetKey(name)
	if err != nil {
		return false, err
	}
	d, err := operations.DiffAppSet(ctx, c, key)
	if err != nil {
		return false, err
	}
	marks := map[string]string{"create": "+", "update": "~", "delete": "-", "orphan": "-"}
	for _, ch := range d.Changes {
		line := fmt.Sprintf("%s %s Application %s", marks[ch.Action], ch.Action, ch.Name)
		if len(ch.Fields) > 0 {
			line += ": " + strings.Join(ch.Fields, ", ")
		}
		fmt.Fprintln(o.Out, line)
	}
	fmt.Fprintf(o.Out, "%d to change, %d unchanged\n", len(d.Changes), d.Unchanged)
	return len(d.Changes) > 0, nil
}

// resumeAppSet continues the set's halted rollout.
func (o *options) resumeAppSet(ctx context.Context, name string) error {
	c, key, err := o.appSetKey(name)
	if err != nil {
		return err
	}
	if _, err := operations.ResumeAppSet(ctx, c, key); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "ApplicationSet %s: rollout resumed\n", key)
	return nil
}

// rollbackAppSet pins every Application of the set to revision.
func (o *options) rollbackAppSet(ctx context.Context, name, revision string) error {
	c, key, err := o.appSetKey(name)
	if err != nil {
		return err
	}
	if _, err := operations.RollbackAppSet(ctx, c, key, revision); err != nil {
		return err
	}
	if revision == "" {
		fmt.Fprintf(o.Out, "ApplicationSet %s: rollback cleared; the source's revision rolls out again\n", key)
		return nil
	}
	fmt.Fprintf(o.Out, "ApplicationSet %s: every generated Application pinned to %s\n", key, revision)
	return nil
}
