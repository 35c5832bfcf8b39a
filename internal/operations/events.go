package operations

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/apply"
)

// Event is one Kubernetes event of an Application or of one of its objects.
type Event struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	Object  string    `json:"object"` // Kind/name
	Message string    `json:"message"`
}

// Events are the events of app and of the objects of its inventory, oldest first.
func Events(ctx context.Context, c client.Reader, app *gitsyncv1.Application) ([]Event, error) {
	type ref struct{ ns, kind, name string }
	refs := []ref{{app.Namespace, gitsyncv1.ApplicationKind, app.Name}}
	for _, e := range apply.EntriesOf(app.Status.Inventory) {
		m, err := e.ObjMetadata()
		if err != nil {
			continue
		}
		refs = append(refs, ref{m.Namespace, m.GroupKind.Kind, m.Name})
	}
	var all []corev1.Event
	for _, r := range refs {
		list := &corev1.EventList{}
		sel := fields.Set{"involvedObject.kind": r.kind, "involvedObject.name": r.name}
		opts := []client.ListOption{client.MatchingFieldsSelector{Selector: sel.AsSelector()}}
		if r.ns != "" {
			opts = append(opts, client.InNamespace(r.ns))
		}
		if err := c.List(ctx, list, opts...); err != nil {
			return nil, fmt.Errorf("listing events of %s %s/%s: %w", r.kind, r.ns, r.name, err)
		}
		all = append(all, list.Items...)
	}
	sort.SliceStable(all, func(i, j int) bool { return eventTime(all[i]).Before(eventTime(all[j])) })
	out := make([]Event, 0, len(all))
	for _, e := range all {
		out = append(out, Event{Time: eventTime(e), Type: e.Type, Reason: e.Reason,
			Object: e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name, Message: strings.TrimSpace(e.Message)})
	}
	return out, nil
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	}
	return e.CreationTimestamp.Time
}
