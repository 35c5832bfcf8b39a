package notify

import (
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
	// and SourceKind its kind (GitRepository or HelmRepository).
	Source, SourceKind string
	Time               time.Time
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
		ev.SourceKind = o.Spec.SourceRef.Kind
		if ev.SourceKind == "" {
			ev.SourceKind = gitsyncv1.GitRepositoryKind
		}
		if o.Spec.SourceRef.Namespace == "" || o.Spec.SourceRef.Namespace == o.Namespace {
			ev.Source = o.Spec.SourceRef.Name
		}
		ev.Revision = o.Status.LastAttemptedRevision
		if ev.Revision == "" && o.Status.Sync != nil {
			ev.Revision = o.Status.Sync.Revision
		}
		if ev.Revision == "" {
			ev.Revision = o.Status.LastAppliedRevision
		}
		ev.Chart, ev.ChartVersion = chartOf(o, ev.Revision)
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
