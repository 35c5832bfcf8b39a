package ui

import (
	"context"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// Params are the Application's parameters that decide what a sync does: the source, the
// path or chart, the values (every value masked: only the keys show), and the policy
// (autoSync, selfHeal, prune, pin, service account), so a person can see why drift is,
// or is not, corrected.
type Params struct {
	// SourceURL (credentials removed), Ref (branch, tag, semver or commit) and
	// SourceRevision (its artifact) are read from the source when the caller may get it.
	SourceURL      string `json:"sourceURL,omitempty"`
	Ref            string `json:"ref,omitempty"`
	SourceRevision string `json:"sourceRevision,omitempty"`
	// VersionRange is spec.helm.version; the resolved version is AppDetail.ChartVersion.
	VersionRange string   `json:"versionRange,omitempty"`
	Values       string   `json:"values,omitempty"`
	ValuesFiles  []string `json:"valuesFiles,omitempty"`
	ValuesFrom   []string `json:"valuesFrom,omitempty"`
	AutoSync     bool     `json:"autoSync"`
	SelfHeal     bool     `json:"selfHeal"`
	Prune        bool     `json:"prune"`
	Interval     string   `json:"interval,omitempty"`
	// ServiceAccount is spec.serviceAccountName ("" : the operator's own identity).
	ServiceAccount string `json:"serviceAccount,omitempty"`
}

// paramsOf reads app's parameters; the source's URL and ref only when the caller may get
// the source.
func (s *Server) paramsOf(ctx context.Context, app *gitsyncv1.Application) Params {
	p := Params{AutoSync: app.Spec.AutoSync == nil || *app.Spec.AutoSync, SelfHeal: app.Spec.SelfHeal == nil || *app.Spec.SelfHeal,
		Prune: app.Spec.Prune, ServiceAccount: app.Spec.ServiceAccountName}
	if app.Spec.Interval != nil {
		p.Interval = app.Spec.Interval.Duration.String()
	}
	if h := app.Spec.Helm; h != nil {
		p.VersionRange, p.ValuesFiles = h.Version, h.ValuesFiles
		if h.Values != nil && len(h.Values.Raw) > 0 {
			p.Values = maskedValues(h.Values.Raw)
		}
		for _, v := range h.ValuesFrom {
			ref := v.Kind + "/" + v.Name
			if v.Key != "" {
				ref += " key " + v.Key
			}
			if v.Optional {
				ref += " (optional)"
			}
			p.ValuesFrom = append(p.ValuesFrom, ref)
		}
	}
	key := sourceid.Key(app)
	switch app.Spec.SourceRef.Kind {
	case gitsyncv1.HelmRepositoryKind:
		h := &gitsyncv1.HelmRepository{}
		if s.mayReadSource(ctx, gitsyncv1.HelmRepositoryKind, key) && s.cache.Get(ctx, key, h) == nil {
			p.SourceURL = displayURL(h.Spec.URL)
			if h.Status.Artifact != nil {
				p.SourceRevision = h.Status.Artifact.Revision
			}
		}
	default:
		g := &gitsyncv1.GitRepository{}
		if s.mayReadSource(ctx, gitsyncv1.GitRepositoryKind, key) && s.cache.Get(ctx, key, g) == nil {
			p.SourceURL, p.Ref = displayURL(g.Spec.URL), gitRef(g.Spec.Ref)
			if g.Status.Artifact != nil {
				p.SourceRevision = g.Status.Artifact.Revision
			}
		}
	}
	return p
}

func (s *Server) mayReadSource(ctx context.Context, kind string, key client.ObjectKey) bool {
	gvk := gitsyncv1.GroupVersion.WithKind(kind)
	return s.canRead(ctx, gvk) && s.mayGet(ctx, callerOf(ctx), gvk, key.Namespace, key.Name)
}

// gitRef says which ref a GitRepository follows.
func gitRef(r *gitsyncv1.GitRepositoryRef) string {
	switch {
	case r == nil:
		return "default branch"
	case r.Commit != "":
		return "commit " + r.Commit
	case r.SemVer != "":
		return "semver " + r.SemVer
	case r.Tag != "":
		return "tag " + r.Tag
	case r.Branch != "":
		return "branch " + r.Branch
	}
	return "default branch"
}

// maskedValues is inline Helm values as YAML with every value replaced by "***": the
// keys show what is set, never what (values often hold passwords).
func maskedValues(raw []byte) string {
	var v any
	if err := yaml.Unmarshal(raw, &v); err != nil {
		return "(not readable)"
	}
	b, err := yaml.Marshal(mask(v))
	if err != nil {
		return "(not readable)"
	}
	return strings.TrimSpace(string(b))
}

func mask(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = mask(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = mask(e)
		}
		return out
	}
	return "***"
}
