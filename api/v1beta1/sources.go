package v1beta1

import (
	"slices"
	"strconv"
	"strings"
)

// SourceList returns the sources an Application renders: spec.sources, or else
// spec.sourceRef with spec.path, targetNamespace, helm and postBuild as a one-element
// list. Every reader of an Application's sources reads them here.
func (in *Application) SourceList() []ApplicationSource {
	if len(in.Spec.Sources) > 0 {
		return in.Spec.Sources
	}
	return []ApplicationSource{{SourceRef: in.Spec.SourceRef, Path: in.Spec.Path, TargetNamespace: in.Spec.TargetNamespace,
		Helm: in.Spec.Helm, PostBuild: in.Spec.PostBuild}}
}

// MultiSource tells whether the Application names its sources in spec.sources.
func (in *Application) MultiSource() bool { return len(in.Spec.Sources) > 0 }

// ForSource returns the Application as it renders sources[i] alone: a copy whose
// spec.sourceRef, path, helm and postBuild are the source's, and targetNamespace too
// when the source sets one, with spec.sources cleared; every other field (decryption,
// patches, images, commonMetadata, status) is the Application's. With spec.sourceRef
// (no spec.sources) it is the Application itself.
func (in *Application) ForSource(i int) *Application {
	if !in.MultiSource() {
		return in
	}
	src := in.Spec.Sources[i]
	out := in.DeepCopy()
	out.Spec.Sources = nil
	out.Spec.SourceRef, out.Spec.Path, out.Spec.Helm, out.Spec.PostBuild = src.SourceRef, src.Path, src.Helm, src.PostBuild
	if src.TargetNamespace != "" {
		out.Spec.TargetNamespace = src.TargetNamespace
	}
	return out
}

// SourceName names a source reference in messages and revisions: `<Kind>/<name>`, or
// `<Kind>/<namespace>/<name>` when it names a namespace other than the Application's.
func (in *Application) SourceName(ref SourceReference) string {
	if ref.Namespace != "" && ref.Namespace != in.Namespace {
		return ref.Kind + "/" + ref.Namespace + "/" + ref.Name
	}
	return ref.Kind + "/" + ref.Name
}

// SourceLabel names sources[i] in messages: "sources[1] (GitRepository/b)", or, with
// spec.sourceRef, "GitRepository/a".
func (in *Application) SourceLabel(i int) string {
	if !in.MultiSource() {
		return in.SourceName(in.Spec.SourceRef)
	}
	return "sources[" + strconv.Itoa(i) + "] (" + in.SourceName(in.Spec.Sources[i].SourceRef) + ")"
}

// RevisionSeparator joins the revisions of several sources in one revision.
const RevisionSeparator = ";"

// JoinRevisions is the revision of an Application with spec.sources: each source's
// revision as `<Kind>/<name>@<revision>` (SourceName), in the order of spec.sources,
// joined by RevisionSeparator; an entry equal to an earlier one (two paths of one
// source) is listed once.
func JoinRevisions(entries []string) string {
	var out []string
	for _, e := range entries {
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return strings.Join(out, RevisionSeparator)
}

// SourceRevision is one entry of a joined revision (and of status.valuesRevisions):
// `<source>@<revision>`.
func SourceRevision(source, revision string) string { return source + "@" + revision }

// SplitRevision splits a revision of several sources (or a list entry such as
// status.valuesRevisions') into its sources and their revisions, in order; a revision
// of one source (no `<Kind>/<name>@` prefix) is returned as one entry with an empty
// source.
func SplitRevision(revision string) []SourceRevisionEntry {
	if revision == "" {
		return nil
	}
	var out []SourceRevisionEntry
	for _, part := range strings.Split(revision, RevisionSeparator) {
		src, rev, ok := strings.Cut(part, "@")
		if !ok || !strings.Contains(src, "/") {
			out = append(out, SourceRevisionEntry{Revision: part})
			continue
		}
		out = append(out, SourceRevisionEntry{Source: src, Revision: rev})
	}
	return out
}

// SourceRevisionEntry is one source's revision in a joined revision.
type SourceRevisionEntry struct {
	// Source is `<Kind>/<name>` (SourceName); empty for the revision of a single source.
	Source string
	// Revision is the source's own revision (`main@sha1:…`, `<chart>@<version>`, …).
	Revision string
}

// RevisionOf returns the own revision of sources[i] (SourceList's order) in a revision
// of the Application: with spec.sources, the entry of a joined revision that names the
// source ("" when none does); with spec.sourceRef, the revision itself.
func (in *Application) RevisionOf(i int, revision string) string {
	if !in.MultiSource() {
		return revision
	}
	name := in.SourceName(in.Spec.Sources[i].SourceRef)
	for _, e := range SplitRevision(revision) {
		if e.Source == name {
			return e.Revision
		}
	}
	return ""
}
