package sources

import (
	"context"
	"errors"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// ErrSecretAccessDenied is returned when a tenant's account may not read the Secret that
// one of its objects names (Ready=False, reason AccessDenied).
var ErrSecretAccessDenied = errors.New("secret access denied")

// SecretAccess checks, in tenant mode (gitsync run --default-service-account), that the
// tenant's account of a namespace may get a Secret before the operator reads it with its
// own identity for an object of that namespace (a GitRepository's or HelmRepository's
// spec.secretRef, a Provider's spec.secretRef). Without it, whoever may create a source in
// a namespace could send any Secret of that namespace to a server of their choosing as
// credentials, although their own role does not let them read it. The nil *SecretAccess
// checks nothing (single-tenant installs, or gitsync run --check-secret-access=false).
type SecretAccess struct {
	// Client creates SubjectAccessReviews (the operator's own client).
	Client client.Client
	// ServiceAccount is the tenant's account in each namespace: the name of
	// --default-service-account.
	ServiceAccount string
}

// NewSecretAccess returns the check for tenant mode, or nil when serviceAccount is empty
// or enabled is false.
func NewSecretAccess(c client.Client, serviceAccount string, enabled bool) *SecretAccess {
	if !enabled || serviceAccount == "" {
		return nil
	}
	return &SecretAccess{Client: c, ServiceAccount: serviceAccount}
}

// Check asks the API server (SubjectAccessReview) whether the tenant's account of
// namespace may get each named Secret; "" names are skipped. A denial wraps
// ErrSecretAccessDenied.
func (a *SecretAccess) Check(ctx context.Context, namespace string, names ...string) error {
	if a == nil {
		return nil
	}
	for _, name := range names {
		if name == "" {
			continue
		}
		user := "system:serviceaccount:" + namespace + ":" + a.ServiceAccount
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   user,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: "get", Resource: "secrets", Namespace: namespace, Name: name,
			},
		}}
		if err := a.Client.Create(ctx, review); err != nil {
			return fmt.Errorf("reviewing access of %s to Secret %s: %w", user, name, err)
		}
		if !review.Status.Allowed {
			return fmt.Errorf("%w: %s may not get Secret %s (tenant mode reads a Secret for an object only when the namespace's account may)",
				ErrSecretAccessDenied, user, name)
		}
	}
	return nil
}

// CheckSecret is Check of one Secret (what internal/notify asks of a Provider's Secret).
func (a *SecretAccess) CheckSecret(ctx context.Context, namespace, name string) error {
	return a.Check(ctx, namespace, name)
}

// CheckGitRepository is Check of the Secrets a GitRepository's spec.secretRef (its
// credentials, sent to spec.url) and spec.verify.secretRef (its signers' keys) name. The
// GitRepository reconciler calls it before it reads them.
func (a *SecretAccess) CheckGitRepository(ctx context.Context, obj *gitsyncv1.GitRepository) error {
	if a == nil {
		return nil
	}
	var creds, keys string
	if obj.Spec.SecretRef != nil {
		creds = obj.Spec.SecretRef.Name
	}
	if obj.Spec.Verify != nil {
		keys = obj.Spec.Verify.SecretRef.Name
	}
	return a.Check(ctx, obj.Namespace, creds, keys)
}

// CheckHelmRepository is Check of the Secret a HelmRepository's spec.secretRef names (its
// credentials, sent to spec.url): the HelmRepository reconciler's poll, and an
// Application's chart download from that repository, call it before reading the Secret.
//
// It checks spec.verify.secretRef (the keyring) too.
func (a *SecretAccess) CheckHelmRepository(ctx context.Context, obj *gitsyncv1.HelmRepository) error {
	if a == nil {
		return nil
	}
	var creds, keys string
	if obj.Spec.SecretRef != nil {
		creds = obj.Spec.SecretRef.Name
	}
	if obj.Spec.Verify != nil {
		keys = obj.Spec.Verify.SecretRef.Name
	}
	return a.Check(ctx, obj.Namespace, creds, keys)
}
