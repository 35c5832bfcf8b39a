package notify

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/forge"
)

// Event is what the dispatcher needs of one recorded event: copied out of the object
// when the event is recorded, so later changes of the object do not show.
type Event struct {
	Kind, Namespace, Name string
	Labels                map[string]string
	// Type is Normal or Warning.
	Type, Reason, Action, Message string
	// Revision is the object's revision from its status: `main@sha1:<hex>` (Git),
	// `<chart>@<version>` (an Application of a HelmRepository chart), `sha256:<hex>` (the
	// index of a HelmRepository).
	Revision string
	// Chart and ChartVersion name the chart an Application rendered at Revision, if any.
	Chart, ChartVersion string
	// Source is the source the object follows (itself for a source), in its namespace,
	// and SourceKind its kind (GitRepository or HelmRepository); empty for an
	// Application of spec.sources (see Sources).
	Source, SourceKind string
	// Sources are every source the object follows, in spec order (itself for a source),
	// each with its own revision in Revision: one for spec.sourceRef, each of
	// spec.sources for an Application of several sources.
	Sources []EventSource
	Time    time.Time
}

// EventSource is one source of an event: its kind, namespace and name, its name in
// revisions and messages (ID: `<Kind>/<name>`, or `<Kind>/<namespace>/<name>` in
// another namespace than the object's), and its own revision in the event's revision
// ("" when the revision does not name it).
type EventSource struct {
	Kind, Namespace, Name, ID, Revision string
}

// Joined reports whether the event's revision joins several sources' revisions (an
// Application of spec.sources): each source's own revision then differs from it.
func (e Event) Joined() bool {
	for _, s := range e.Sources {
		if s.Revision != e.Revision {
			return true
		}
	}
	return false
}

// Warning reports whether the event is a Warning (the `error` severity).
func (e Event) Warning() bool { return e.Type == corev1.EventTypeWarning }

// Severity is `error` for Warning events, `info` otherwise.
func (e Event) Severity() string {
	if e.Warning() {
		return gitsyncv1.SeverityError
	}
	return gitsyncv1.SeverityInfo
}

// Subject names the object: `Application/ns/name`.
func (e Event) Subject() string { return e.Kind + "/" + e.Namespace + "/" + e.Name }

// FromObject copies an event of a GitRepository, HelmRepository, OCIRepository,
// Application or Cluster; ok is false for other objects (they are not routed).
func FromObject(obj any, eventtype, reason, action, message string) (Event, bool) {
	ev := Event{Type: eventtype, Reason: reason, Action: action, Message: message, Time: time.Now()}
	switch o := obj.(type) {
	case *gitsyncv1.GitRepository:
		ev.ofSource(gitsyncv1.GitRepositoryKind, &o.ObjectMeta, o.Status.Artifact)
	case *gitsyncv1.HelmRepository:
		ev.ofSource(gitsyncv1.HelmRepositoryKind, &o.ObjectMeta, o.Status.Artifact)
	case *gitsyncv1.OCIRepository:
		ev.ofSource(gitsyncv1.OCIRepositoryKind, &o.ObjectMeta, nil)
		if a := o.Status.Artifact; a != nil {
			ev.Revision = a.Revision
		}
	case *gitsyncv1.Application:
		ev.Kind, ev.Namespace, ev.Name = gitsyncv1.ApplicationKind, o.Namespace, o.Name
		ev.Labels = copyLabels(o.Labels)
		ev.Revision = o.Status.LastAttemptedRevision
		if ev.Revision == "" && o.Status.Sync != nil {
			ev.Revision = o.Status.Sync.Revision
		}
		if ev.Revision == "" {
			ev.Revision = o.Status.LastAppliedRevision
		}
		ev.Sources = appSources(o, ev.Revision)
		if !o.MultiSource() {
			ev.SourceKind = ev.Sources[0].Kind
			if ev.Sources[0].Namespace == o.Namespace {
				ev.Source = o.Spec.SourceRef.Name
			}
			ev.Chart, ev.ChartVersion = chartOf(o, ev.Revision)
		}
	case *gitsyncv1.Cluster: // reachability changes (controller/cluster)
		ev.Kind, ev.Namespace, ev.Name = gitsyncv1.ClusterKind, o.Namespace, o.Name
		ev.Labels = copyLabels(o.Labels)
	default:
		return Event{}, false
	}
	return ev, true
}

// ofSource fills in an event of a source: the source is itself, the revision its artifact's.
func (e *Event) ofSource(kind string, meta *metav1.ObjectMeta, artifact *gitsyncv1.Artifact) {
	e.Kind, e.Namespace, e.Name = kind, meta.Namespace, meta.Name
	e.Labels = copyLabels(meta.Labels)
	e.Source, e.SourceKind = meta.Name, kind
	if artifact != nil {
		e.Revision = artifact.Revision
	}
	e.Sources = []EventSource{{Kind: kind, Namespace: meta.Namespace, Name: meta.Name, ID: kind + "/" + meta.Name, Revision: e.Revision}}
}

// appSources are an Application's sources (Application.SourceList), each with its own
// revision in revision; a source of no kind is a GitRepository, of no namespace the
// Application's.
func appSources(app *gitsyncv1.Application, revision string) []EventSource {
	list := app.SourceList()
	out := make([]EventSource, 0, len(list))
	for i, src := range list {
		ref := src.SourceRef
		if ref.Kind == "" {
			ref.Kind = gitsyncv1.GitRepositoryKind
		}
		s := EventSource{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, ID: app.SourceName(ref),
			Revision: app.RevisionOf(i, revision)}
		if s.Namespace == "" {
			s.Namespace = app.Namespace
		}
		if !slices.Contains(out, s) {
			out = append(out, s) // two paths of one source: listed once
		}
	}
	return out
}

// chartOf names the chart an Application renders at revision: from the revision itself
// (`<chart>@<version>`) with a HelmRepository source, else from status.sync when it
// describes that revision (a chart in Git).
func chartOf(app *gitsyncv1.Application, revision string) (chart, version string) {
	if app.Spec.SourceRef.Kind == gitsyncv1.HelmRepositoryKind {
		if c, v, ok := strings.Cut(revision, "@"); ok {
			return c, v
		}
	}
	if s := app.Status.Sync; s != nil && s.Chart != "" && s.Revision == revision {
		return s.Chart, s.ChartVersion
	}
	return "", ""
}

func copyLabels(in map[string]string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// Commit returns the 40-hex SHA-1 of a revision (`main@sha1:<hex>` or `sha1:<hex>`), or "".
func Commit(revision string) string {
	i := strings.LastIndex(revision, "sha1:")
	if i < 0 {
		return ""
	}
	sha := revision[i+len("sha1:"):]
	if len(sha) != 40 {
		return ""
	}
	return sha
}

// Repo is a forge repository parsed from a Git URL (forge.Repo).
type Repo = forge.Repo

// ParseRepo reads host and `owner/repo` from an https, ssh or scp-like Git URL.
func ParseRepo(raw string) (Repo, error) { return forge.ParseRepo(raw) }

// CommitURL is the web page of a commit on a known forge (github.com, gitlab.com,
// bitbucket.org, codeberg.org), or "".
func CommitURL(repoURL, sha string) string {
	r, err := ParseRepo(repoURL)
	if err != nil || sha == "" {
		return ""
	}
	switch r.Host {
	case "github.com":
		return "https://github.com/" + r.Path + "/commit/" + sha
	case "gitlab.com":
		return "https://gitlab.com/" + r.Path + "/-/commit/" + sha
	case "bitbucket.org":
		return "https://bitbucket.org/" + r.Path + "/commits/" + sha
	case "codeberg.org":
		return "https://codeberg.org/" + r.Path + "/commit/" + sha
	}
	return ""
}
