package ui

import (
	"context"
	"sort"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/redact"
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
	// State is what dominates the row: Failed or Stalled (with Reason), Ready or
	// Progressing; Failing is true for the first two.
	State   string `json:"state"`
	Failing bool   `json:"failing"`
	Reason  string `json:"reason,omitempty"`
	// Pinned is spec.pinnedRevision: the app was rolled back and ignores new commits.
	Pinned string `json:"pinned,omitempty"`
	// ApplicationSet is the set that generated the application (label
	// gitsync.dev/applicationset), in its namespace.
	ApplicationSet string `json:"applicationSet,omitempty"`
	// WindowClosed: status.syncWindow says Closed (spec.syncWindows hold new revisions
	// back) until WindowUntil (empty: not within a year); WindowHeld is the revision held.
	WindowClosed bool   `json:"windowClosed,omitempty"`
	WindowUntil  string `json:"windowUntil,omitempty"`
	WindowHeld   string `json:"windowHeld,omitempty"`
}

// SourceRow is one line of the sources view.
type SourceRow struct {
	// Kind is GitRepository or HelmRepository.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// URL is spec.url without user info.
	URL   string `json:"url"`
	Ready string `json:"ready"`
	// Revision is a GitRepository's revision, or the short digest of a HelmRepository's
	// index; RevisionFull all of it.
	Revision     string `json:"revision"`
	RevisionFull string `json:"revisionFull,omitempty"`
	LastFetch    string `json:"lastFetch,omitempty"`
	Message      string `json:"message,omitempty"`
	Suspended    bool   `json:"suspended"`
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
	// Source is Kind/namespace/name of the source, and SourceLink its row in the sources view.
	Source     string `json:"source"`
	SourceLink string `json:"sourceLink"`
	// Sources are the sources of spec.sources, with the revision of each that was last
	// applied (empty with one source).
	Sources []SourceView `json:"sources,omitempty"`
	// Cluster is namespace/name of the Cluster the application syncs to (spec.cluster):
	// its tree, objects and diffs are read there. Empty: this cluster.
	Cluster string `json:"cluster,omitempty"`
	// Rollout is the rollout of the application's ApplicationSet, when it has one.
	Rollout *RolloutView `json:"rollout,omitempty"`
	// Images are the images of its live objects that ImagePolicies automate.
	Images []AutomatedImage `json:"images,omitempty"`
	// Path is spec.path of a Git source; Chart and ChartVersion name the chart rendered
	// (from a HelmRepository, or a chart in Git).
	Path         string                       `json:"path,omitempty"`
	Chart        string                       `json:"chart,omitempty"`
	ChartVersion string                       `json:"chartVersion,omitempty"`
	Conditions   []Condition                  `json:"conditions"`
	History      []gitsyncv1.SyncHistoryEntry `json:"history"`
	DriftItems   []gitsyncv1.DriftedObject    `json:"driftItems"`
	Events       []Event                      `json:"events"`
	Tree         []*Node                      `json:"tree"`
	Objects      int                          `json:"objects"`
	Params       Params                       `json:"params"`
	// SelectiveSync is status.selectiveSync: the objects a selective sync applied and
	// from which revision; the rest of that revision waits for a full sync.
	SelectiveSync *gitsyncv1.SelectiveSyncStatus `json:"selectiveSync,omitempty"`
	// Actions the identity may do here (empty in read-only mode).
	CanSync    bool `json:"canSync"`
	CanSuspend bool `json:"canSuspend"`
	// CanRollback: CanSync, of a Git source (a chart's version is pinned in the spec).
	CanRollback bool `json:"canRollback"`
}

const timeFormat = "2006-01-02 15:04:05Z07:00"

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeFormat)
}

// shortRevision turns "main@sha1:<40 hex>" into its first 7 hex digits; a chart's
// "<chart>@<version>" stays whole.
func shortRevision(rev string) string {
	i := strings.LastIndex(rev, ":")
	if i < 0 {
		return rev
	}
	rev = rev[i+1:]
	if len(rev) > 7 {
		rev = rev[:7]
	}
	return rev
}

// shortDigest turns "sha256:<64 hex>" into "sha256:" and its first 12 hex digits.
func shortDigest(digest string) string {
	if algo, hex, ok := strings.Cut(digest, ":"); ok && len(hex) > 12 {
		return algo + ":" + hex[:12]
	}
	return digest
}

func rowOfApp(a *gitsyncv1.Application) AppRow {
	r := AppRow{Namespace: a.Namespace, Name: a.Name, Ready: "Unknown", Sync: "Unknown", Health: "Unknown",
		RevisionFull: a.Status.LastAppliedRevision, Revision: revisionCell(a),
		Drift: len(a.Status.Drift), Suspended: a.Spec.Suspend, ApplicationSet: setOf(a)}
	if w := a.Status.SyncWindow; w != nil && w.State == gitsyncv1.SyncWindowClosed {
		r.WindowClosed, r.WindowHeld = true, w.HeldRevision
		if w.Until != nil {
			r.WindowUntil = formatTime(w.Until.Time)
		}
	}
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
	r.setState(a)
	return r
}

func rowOfSource(g *gitsyncv1.GitRepository) SourceRow {
	r := sourceRow(gitsyncv1.GitRepositoryKind, g.ObjectMeta, g.Spec.URL, g.Spec.Suspend, g.Status.Conditions, g.Status.Artifact)
	r.Revision = r.RevisionFull
	return r
}

func rowOfHelmRepository(h *gitsyncv1.HelmRepository) SourceRow {
	r := sourceRow(gitsyncv1.HelmRepositoryKind, h.ObjectMeta, h.Spec.URL, h.Spec.Suspend, h.Status.Conditions, h.Status.Artifact)
	r.Revision = shortDigest(r.RevisionFull)
	return r
}

// displayURL is a source URL without what may be a credential (redact.URL).
func displayURL(raw string) string { return redact.URL(raw) }

// sourceRow is what both source kinds show: the URL without user info (it may hold a
// password), readiness and the artifact.
func sourceRow(kind string, meta metav1.ObjectMeta, rawURL string, suspended bool, conds []metav1.Condition, artifact *gitsyncv1.Artifact) SourceRow {
	r := SourceRow{Kind: kind, Namespace: meta.Namespace, Name: meta.Name, URL: displayURL(rawURL), Ready: "Unknown",
		Revision: "-", Suspended: suspended}
	if c := apimeta.FindStatusCondition(conds, gitsyncv1.ReadyCondition); c != nil {
		r.Ready, r.Message = string(c.Status), c.Message
	}
	if artifact != nil {
		r.RevisionFull = artifact.Revision
		r.LastFetch = formatTime(artifact.LastUpdateTime.Time)
	}
	if r.RevisionFull == "" {
		r.RevisionFull = "-"
	}
	return r
}

// listApps reads the Applications from the cache, of the namespaces where the caller may
// list them, sorted by namespace and name.
func (s *Server) listApps(ctx context.Context) ([]AppRow, error) {
	list := &gitsyncv1.ApplicationList{}
	if err := s.cache.List(ctx, list); err != nil {
		return nil, err
	}
	may := s.listable(ctx, gitsyncv1.ApplicationKind)
	rows := make([]AppRow, 0, len(list.Items))
	for i := range list.Items {
		if may(list.Items[i].Namespace) {
			rows = append(rows, rowOfApp(&list.Items[i]))
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Namespace != rows[j].Namespace {
			return rows[i].Namespace < rows[j].Namespace
		}
		return rows[i].Name < rows[j].Name
	})
	return rows, nil
}

// listSources reads the GitRepositories, and the HelmRepositories when the identity may
// list them, from the cache, of the namespaces where the caller may list each kind,
// sorted by namespace, name and kind.
func (s *Server) listSources(ctx context.Context) ([]SourceRow, error) {
	list := &gitsyncv1.GitRepositoryList{}
	if err := s.cache.List(ctx, list); err != nil {
		return nil, err
	}
	rows := make([]SourceRow, 0, len(list.Items))
	may := s.listable(ctx, gitsyncv1.GitRepositoryKind)
	for i := range list.Items {
		if may(list.Items[i].Namespace) {
			rows = append(rows, rowOfSource(&list.Items[i]))
		}
	}
	if s.canRead(ctx, gitsyncv1.GroupVersion.WithKind(gitsyncv1.HelmRepositoryKind)) {
		helm := &gitsyncv1.HelmRepositoryList{}
		if err := s.cache.List(ctx, helm); err != nil {
			return nil, err
		}
		may := s.listable(ctx, gitsyncv1.HelmRepositoryKind)
		for i := range helm.Items {
			if may(helm.Items[i].Namespace) {
				rows = append(rows, rowOfHelmRepository(&helm.Items[i]))
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Namespace+"/"+a.Name != b.Namespace+"/"+b.Name {
			return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
		}
		return a.Kind < b.Kind
	})
	return rows, nil
}

// listable says, per namespace, whether the request's caller may list gitsync's kind
// there (one review per namespace).
func (s *Server) listable(ctx context.Context, kind string) func(namespace string) bool {
	who, seen := callerOf(ctx), map[string]bool{}
	gvk := gitsyncv1.GroupVersion.WithKind(kind)
	return func(ns string) bool {
		may, ok := seen[ns]
		if !ok {
			may = s.mayList(ctx, who, gvk, ns)
			seen[ns] = may
		}
		return may
	}
}
