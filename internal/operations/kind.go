package operations

import (
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// Kind is a kind of object a person acts on: an Application or one of its sources.
type Kind string

const (
	// App is an Application.
	App Kind = "app"
	// GitRepository is a GitRepository source.
	GitRepository Kind = "source"
	// HelmRepository is a HelmRepository source.
	HelmRepository Kind = "helmrepo"
	// OCIRepository is an OCIRepository source.
	OCIRepository Kind = "ocirepo"
)

// ParseKind reads the singular, plural and short names people type (app, gsapp,
// application; source, gitrepo, gitrepository; helmrepo, helmrepository). "" is an
// Application.
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(s) {
	case "", "app", "apps", "gsapp", "gsapps", "application", "applications":
		return App, nil
	case "source", "sources", "gitrepo", "gitrepos", "gitrepository", "gitrepositories":
		return GitRepository, nil
	case "helmrepo", "helmrepos", "helmrepository", "helmrepositories":
		return HelmRepository, nil
	case "ocirepo", "ocirepos", "ocirepository", "ocirepositories":
		return OCIRepository, nil
	}
	return "", fmt.Errorf("unknown kind %q: use app, source, helmrepo or ocirepo", s)
}

// SourceKind is the kind of app's source.
func SourceKind(app *gitsyncv1.Application) Kind {
	switch app.Spec.SourceRef.Kind {
	case gitsyncv1.HelmRepositoryKind:
		return HelmRepository
	case gitsyncv1.OCIRepositoryKind:
		return OCIRepository
	}
	return GitRepository
}

// Name is the API kind: Application, GitRepository or HelmRepository.
func (k Kind) Name() string {
	switch k {
	case GitRepository:
		return gitsyncv1.GitRepositoryKind
	case HelmRepository:
		return gitsyncv1.HelmRepositoryKind
	case OCIRepository:
		return gitsyncv1.OCIRepositoryKind
	}
	return gitsyncv1.ApplicationKind
}

// NewObject is an empty object of kind k.
func (k Kind) NewObject() client.Object {
	switch k {
	case GitRepository:
		return &gitsyncv1.GitRepository{}
	case HelmRepository:
		return &gitsyncv1.HelmRepository{}
	case OCIRepository:
		return &gitsyncv1.OCIRepository{}
	}
	return &gitsyncv1.Application{}
}

// NewList is an empty list of kind k.
func (k Kind) NewList() client.ObjectList {
	switch k {
	case GitRepository:
		return &gitsyncv1.GitRepositoryList{}
	case HelmRepository:
		return &gitsyncv1.HelmRepositoryList{}
	case OCIRepository:
		return &gitsyncv1.OCIRepositoryList{}
	}
	return &gitsyncv1.ApplicationList{}
}

// suspended tells whether obj's spec.suspend is set.
func suspended(obj client.Object) bool {
	switch o := obj.(type) {
	case *gitsyncv1.GitRepository:
		return o.Spec.Suspend
	case *gitsyncv1.HelmRepository:
		return o.Spec.Suspend
	case *gitsyncv1.OCIRepository:
		return o.Spec.Suspend
	case *gitsyncv1.Application:
		return o.Spec.Suspend
	}
	return false
}

// handledAt is obj's status.lastHandledReconcileAt.
func handledAt(obj client.Object) string {
	switch o := obj.(type) {
	case *gitsyncv1.GitRepository:
		return o.Status.LastHandledReconcileAt
	case *gitsyncv1.HelmRepository:
		return o.Status.LastHandledReconcileAt
	case *gitsyncv1.OCIRepository:
		return o.Status.LastHandledReconcileAt
	case *gitsyncv1.Application:
		return o.Status.LastHandledReconcileAt
	}
	return ""
}
