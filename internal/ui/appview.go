package ui

import (
	"context"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// appDetail builds the application view from the cache.
func (s *Server) appDetail(ctx context.Context, app *gitsyncv1.Application) (*AppDetail, error) {
	d := &AppDetail{AppRow: rowOfApp(app), Path: app.Spec.Path, History: app.Status.History, DriftItems: app.Status.Drift,
		SelectiveSync: app.Status.SelectiveSync}
	key := sourceid.Key(app)
	kind := app.Spec.SourceRef.Kind
	if kind == "" {
		kind = gitsyncv1.GitRepositoryKind
	}
	d.Source = kind + "/" + key.Namespace + "/" + key.Name
	d.SourceLink = "/sources#" + d.Source
	if app.MultiSource() {
		d.Path, d.Sources = "", sourcesOf(app) // sources.go
		d.Source, d.SourceLink = d.Sources[0].Name, d.Sources[0].Link
		kind = "" // each source says its own path or chart
	}
	d.Cluster = clusterOf(app)
	if kind == gitsyncv1.HelmRepositoryKind {
		d.Path = "" // a chart of the repository: spec.path does not apply
		if app.Spec.Helm != nil {
			d.Chart = app.Spec.Helm.Chart
		}
	}
	if s := app.Status.Sync; s != nil && s.Chart != "" {
		d.Chart, d.ChartVersion = s.Chart, s.ChartVersion
	}
	for _, c := range app.Status.Conditions {
		d.Conditions = append(d.Conditions, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason,
			Message: c.Message, Plain: plainCondition(c), Since: formatTime(c.LastTransitionTime.Time)})
	}
	d.Params = s.paramsOf(ctx, app)
	d.Rollout = s.rolloutOf(ctx, app)
	events, err := s.appEvents(ctx, app)
	if err != nil {
		return nil, err
	}
	d.Events = events
	tree, n, err := s.tree(ctx, app)
	if err != nil {
		return nil, err
	}
	d.Tree, d.Objects = tree, n
	d.Images = s.automatedImages(ctx, app, tree)
	return d, nil
}

// appEvents are the cached events about the Application, newest first: none when the
// caller may not list events in its namespace.
func (s *Server) appEvents(ctx context.Context, app *gitsyncv1.Application) ([]Event, error) {
	if !s.mayList(ctx, callerOf(ctx), corev1.SchemeGroupVersion.WithKind("Event"), app.Namespace) {
		return nil, nil
	}
	list := &corev1.EventList{}
	if err := s.cache.List(ctx, list, client.InNamespace(app.Namespace)); err != nil {
		return nil, err
	}
	type timed struct {
		Event
		at time.Time
	}
	var out []timed
	for _, e := range list.Items {
		if e.InvolvedObject.Kind != gitsyncv1.ApplicationKind || e.InvolvedObject.Name != app.Name {
			continue
		}
		at := e.LastTimestamp.Time
		if at.IsZero() {
			at = e.EventTime.Time
		}
		if at.IsZero() {
			at = e.CreationTimestamp.Time
		}
		out = append(out, timed{Event{Type: e.Type, Reason: e.Reason, Message: e.Message, Time: formatTime(at), Count: e.Count}, at})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.After(out[j].at) })
	events := make([]Event, 0, len(out))
	for _, e := range out {
		events = append(events, e.Event)
	}
	if len(events) > 50 {
		events = events[:50]
	}
	return events, nil
}

// plainCondition says a condition in words.
func plainCondition(c metav1.Condition) string {
	t := c.Status == metav1.ConditionTrue
	switch c.Type {
	case gitsyncv1.ReadyCondition:
		if t {
			return "The last sync succeeded."
		}
		if c.Status == metav1.ConditionUnknown {
			return "A sync is in progress or has not finished yet."
		}
		if c.Reason == gitsyncv1.PartiallySyncedReason {
			return "A selective sync applied part of the revision; the rest waits for a full sync."
		}
		return "The last sync did not succeed (" + c.Reason + ")."
	case gitsyncv1.ReconcilingCondition:
		if t {
			return "gitsync is working on this application now."
		}
		return "gitsync is not working on it right now."
	case gitsyncv1.StalledCondition:
		if t {
			return "gitsync cannot make progress until the spec or the source changes (" + c.Reason + ")."
		}
		return "Not stuck."
	case gitsyncv1.HealthyCondition:
		if t {
			return "Every applied object is healthy."
		}
		return "Some applied object is not healthy yet."
	}
	if t {
		return c.Type + " holds."
	}
	return c.Type + " does not hold."
}
