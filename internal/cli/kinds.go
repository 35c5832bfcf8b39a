package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operations"
)

// kind is one of the CLI's object kinds: "source" (GitRepository; listing them also
// lists the HelmRepositories, as sources), "helmrepo" (HelmRepository) or "app"
// (Application).
type kind string

// The kinds are operations.Kind's values.
const (
	kindSource   = kind(operations.GitRepository)
	kindHelmRepo = kind(operations.HelmRepository)
	kindOCIRepo  = kind(operations.OCIRepository)
	kindApp      = kind(operations.App)
)

// parseKind accepts the singular, plural and short names kubectl users type.
func parseKind(s string) (kind, error) {
	switch strings.ToLower(s) {
	case "source", "sources", "gitrepo", "gitrepos", "gitrepository", "gitrepositories":
		return kindSource, nil
	case "helmrepo", "helmrepos", "helmrepository", "helmrepositories":
		return kindHelmRepo, nil
	case "ocirepo", "ocirepos", "ocirepository", "ocirepositories":
		return kindOCIRepo, nil
	case "app", "apps", "gsapp", "gsapps", "application", "applications":
		return kindApp, nil
	}
	return "", fmt.Errorf("unknown kind %q: use sources, helmrepos, ocirepos or apps", s)
}

// objectArgsCount is the argument check of the verbs that take one object: `KIND NAME`,
// or Flux's `source git|helm NAME` (see objectArgs).
var objectArgsCount = cobra.RangeArgs(2, 3)

// objectArgs reads the object of `gitsync VERB KIND NAME`, the one form every verb on
// one object takes: KIND as parseKind reads it, or Flux's `source git NAME` and `source
// helm NAME`, after which it says what gitsync's form is.
func (o *options) objectArgs(verb string, args []string) (kind, string, error) {
	if len(args) == 2 {
		k, err := parseKind(args[0])
		return k, args[1], err
	}
	if len(args) == 3 && strings.EqualFold(args[0], "source") {
		var k kind
		switch strings.ToLower(args[1]) {
		case "git":
			k = kindSource
		case "helm":
			k = kindHelmRepo
		}
		if k != "" {
			fmt.Fprintf(o.ErrOut, "(gitsync's form: gitsync %s %s %s)\n", verb, k, args[2])
			return k, args[2], nil
		}
	}
	return "", "", fmt.Errorf("accepts 2 arg(s) (KIND NAME), or Flux's `source git|helm NAME`; received %d", len(args))
}

// kindName, newObject and newList are operations.Kind's.
func (k kind) kindName() string { return operations.Kind(k).Name() }

func (k kind) newObject() client.Object { return operations.Kind(k).NewObject() }

func (k kind) newList() client.ObjectList { return operations.Kind(k).NewList() }

// listed are the kinds that `get` lists for k: sources are GitRepositories,
// HelmRepositories and OCIRepositories.
func (k kind) listed() []kind {
	if k == kindSource {
		return []kind{kindSource, kindHelmRepo, kindOCIRepo}
	}
	return []kind{k}
}

// namePrefix is the KIND/ of a row of a listing of sources, which holds two kinds:
// `gitrepository/NAME`, `helmrepository/NAME` (the names kubectl and flux take).
func (k kind) namePrefix(obj client.Object) string {
	if k != kindSource {
		return ""
	}
	if _, helm := obj.(*gitsyncv1.HelmRepository); helm {
		return strings.ToLower(gitsyncv1.HelmRepositoryKind) + "/"
	}
	if _, isOCI := obj.(*gitsyncv1.OCIRepository); isOCI {
		return strings.ToLower(gitsyncv1.OCIRepositoryKind) + "/"
	}
	return strings.ToLower(gitsyncv1.GitRepositoryKind) + "/"
}

// items returns the objects of a list of k.
func items(list client.ObjectList) []client.Object {
	var out []client.Object
	switch l := list.(type) {
	case *gitsyncv1.GitRepositoryList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *gitsyncv1.HelmRepositoryList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *gitsyncv1.OCIRepositoryList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *gitsyncv1.ApplicationList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	return out
}

// row is what `get` shows of one object.
type row struct {
	Namespace, Name, Ready, Sync, Health, Revision, Age, Message string
	// Window is the sync windows' state (windowCell); "-" without windows.
	Window    string
	Suspended bool
}

func rowOf(obj client.Object, now time.Time) row {
	r := row{Namespace: obj.GetNamespace(), Name: obj.GetName(), Ready: "Unknown", Sync: "-", Health: "-", Revision: "-", Window: "-"}
	if c := operations.Ready(obj); c != nil {
		r.Ready, r.Message = string(c.Status), c.Message
	}
	switch o := obj.(type) {
	case *gitsyncv1.GitRepository:
		if o.Status.Artifact != nil {
			r.Revision = o.Status.Artifact.Revision
		}
		r.Suspended = o.Spec.Suspend
	case *gitsyncv1.HelmRepository:
		if o.Status.Artifact != nil {
			r.Revision = o.Status.Artifact.Revision
		}
		r.Suspended = o.Spec.Suspend
	case *gitsyncv1.OCIRepository:
		if o.Status.Artifact != nil {
			r.Revision = o.Status.Artifact.Revision
		}
		r.Suspended = o.Spec.Suspend
	case *gitsyncv1.Application:
		if o.Status.Sync != nil {
			r.Sync = o.Status.Sync.Status
		}
		if o.Status.Health != nil {
			r.Health = o.Status.Health.Status
		}
		if o.Status.LastAppliedRevision != "" {
			r.Revision = o.Status.LastAppliedRevision
			if o.MultiSource() { // every source's, shortened: -o yaml has them whole
				r.Revision = operations.RevisionCell(o.Status.LastAppliedRevision)
			}
		}
		r.Window = windowCell(o.Status.SyncWindow, now)
		if pin := pinnedRevision(o); pin != "" {
			r.Message = "pinned to " + pin + " (gitsync resume to follow the source); " + r.Message
		}
		r.Suspended = o.Spec.Suspend
	}
	if r.Suspended {
		r.Message = "suspended; " + r.Message
	}
	if ts := obj.GetCreationTimestamp(); !ts.IsZero() {
		r.Age = duration.HumanDuration(now.Sub(ts.Time))
	}
	// All lines: the table's MESSAGE column shows the first (messageCell).
	r.Message = strings.TrimSuffix(r.Message, "; ")
	return r
}

// statusSelector filters rows by ready=, sync=, health= and suspended= (comma-separated,
// all must match, case-insensitive).
type statusSelector map[string]string

func parseStatusSelector(s string) (statusSelector, error) {
	sel := statusSelector{}
	if s == "" {
		return sel, nil
	}
	for _, term := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(term), "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok || v == "" {
			return nil, fmt.Errorf("--status-selector %q: want key=value terms, e.g. ready=false", s)
		}
		switch k {
		case "ready", "sync", "health", "suspended":
		default:
			return nil, fmt.Errorf("--status-selector: unknown key %q (ready, sync, health, suspended)", k)
		}
		sel[k] = strings.TrimSpace(v)
	}
	return sel, nil
}

func (sel statusSelector) matches(r row) bool {
	for k, want := range sel {
		var got string
		switch k {
		case "ready":
			got = r.Ready
		case "sync":
			got = r.Sync
		case "health":
			got = r.Health
		case "suspended":
			got = fmt.Sprint(r.Suspended)
		}
		if !strings.EqualFold(got, want) {
			return false
		}
	}
	return true
}
