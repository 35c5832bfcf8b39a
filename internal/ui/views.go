package ui

import (
	"context"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
)

// AppRow is one line of the applications view.
type AppRow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Ready     string `json:"ready"`
	Sync      string `json:"sync"`
	Health    string `json:"health"`
	// Revision is the short commit of the last applied revision; RevisionFull all of it.
	Revision     string `json:"revision"`
	RevisionFull string `json:"revisionFull,omitempty"`
	Drift        int    `json:"drift"`
	LastSync     string `json:"lastSync,omitempty"`
	LastResult   string `json:"lastResult,omitempty"`
	Suspended    bool   `json:"suspended"`
	Message      string `json:"message,omitempty"`
}

// SourceRow is one line of the sources view.
type SourceRow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	URL       string `json:"url"`
	Ready     string `json:"ready"`
	Revision  string `json:"revision"`
	LastFetch string `json:"lastFetch,omitempty"`
	Message   string `json:"message,omitempty"`
	Suspended bool   `json:"suspended"`
}

// Condition is a status condition with a sentence a person reads.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Plain   string `json:"plain"`
	Since   string `json:"since"`
}

// Event is one Kubernetes event about the Application.
type Event struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Time    string `json:"time"`
	Count   int32  `json:"count,omitempty"`
}

// AppDetail is the application view.
type AppDetail struct {
	AppRow
	Source     string                       `json:"source"`
	Path       string                       `json:"path"`
	Conditions []Condition                  `json:"conditions"`
	History    []gitsyncv1.SyncHistoryEntry `json:"history"`
	DriftItems []gitsyncv1.DriftedObject    `json:"driftItems"`
	Events     []Event                      `json:"events"`
	Tree       []*Node                      `json:"tree"`
	Objects    int                          `json:"objects"`
	// Actions the identity may do here (empty in read-only mode).
	CanSync    bool `json:"canSync"`
	CanSuspend bool `json:"canSuspend"`
}

const timeFormat = "2006-01-02 15:04:05Z07:00"

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeFormat)
}

// shortRevision turns "main@sha1:<40 hex>" into its first 7 hex digits.
func shortRevision(rev string) string {
	if i := strings.LastIndex(rev, ":"); i >= 0 {
		rev = rev[i+1:]
	}
	if len(rev) > 7 {
		rev = rev[:7]
	}
	return rev
}

func rowOfApp(a *gitsyncv1.Application) AppRow {
	r := AppRow{Namespace: a.Namespace, Name: a.Name, Ready: "Unknown", Sync: "Unknown", Health: "Unknown",
		RevisionFull: a.Status.LastAppliedRevision, Revision: shortRevision(a.Status.LastAppliedRevision),
		Drift: len(a.Status.Drift), Suspended: a.Spec.Suspend}
	if c := apimeta.FindStatusCondition(a.Status.Conditions, gitsyncv1.ReadyCondition); c != nil {
		r.Ready, r.Message = string(c.Status), c.Message
	}
	if a.Status.Sync != nil {
		r.Sync = a.Status.Sync.Status
	}
	if a.Status.Health != nil {
		r.Health = a.Status.Health.Status
	}
	if len(a.Status.History) > 0 {
		h := a.Status.History[0]
		r.LastResult = h.Result
		r.LastSync = formatTime(h.StartedAt.Time)
		if h.FinishedAt != nil {
			r.LastSync = formatTime(h.FinishedAt.Time)
		}
	}
	return r
}

func rowOfSource(g *gitsyncv1.GitRepository) SourceRow {
	r := SourceRow{Namespace: g.Namespace, Name: g.Name, URL: g.Spec.URL, Ready: "Unknown", Revision: "-", Suspended: g.Spec.Suspend}
	if c := apimeta.FindStatusCondition(g.Status.Conditions, gitsyncv1.ReadyCondition); c != nil {
		r.Ready, r.Message = string(c.Status), c.Message
	}
	if g.Status.Artifact != nil {
		r.Revision = g.Status.Artifact.Revision
		r.LastFetch = formatTime(g.Status.Artifact.LastUpdateTime.Time)
	}
	return r
}

// listApps reads the Applications from the cache, sorted by namespace and name.
func (s *Server) listApps(ctx context.Context) ([]AppRow, error) {
	list := &gitsyncv1.ApplicationList{}
	if err := s.cache.List(ctx, list); err != nil {
		return nil, err
	}
	rows := make([]AppRow, 0, len(list.Items))
	for i := range list.Items {
		rows = append(rows, rowOfApp(&list.Items[i]))
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Namespace != rows[j].Namespace {
			return rows[i].Namespace < rows[j].Namespace
		}
		return rows[i].Name < rows[j].Name
	})
	return rows, nil
}

func (s *Server) listSources(ctx context.Context) ([]SourceRow, error) {
	list := &gitsyncv1.GitRepositoryList{}
	if err := s.cache.List(ctx, list); err != nil {
		return nil, err
	}
	rows := make([]SourceRow, 0, len(list.Items))
	for i := range list.Items {
		rows = append(rows, rowOfSource(&list.Items[i]))
	}
	sort.Slice(rows, func(i, j int) bool {
		return rows[i].Namespace+"/"+rows[i].Name < rows[j].Namespace+"/"+rows[j].Name
	})
	return rows, nil
}

// appDetail builds the application view from the cache.
func (s *Server) appDetail(ctx context.Context, app *gitsyncv1.Application) (*AppDetail, error) {
	d := &AppDetail{AppRow: rowOfApp(app), Path: app.Spec.Path, History: app.Status.History, DriftItems: app.Status.Drift}
	ns := app.Spec.SourceRef.Namespace
	if ns == "" {
		ns = app.Namespace
	}
	d.Source = app.Spec.SourceRef.Kind + "/" + ns + "/" + app.Spec.SourceRef.Name
	for _, c := range app.Status.Conditions {
		d.Conditions = append(d.Conditions, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason,
			Message: c.Message, Plain: plainCondition(c), Since: formatTime(c.LastTransitionTime.Time)})
	}
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
	return d, nil
}

// appEvents are the cached events about the Application, newest first.
func (s *Server) appEvents(ctx context.Context, app *gitsyncv1.Application) ([]Event, error) {
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
