package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	"github.com/gitsync-dev/gitsync/internal/webhook"
)

// WebhookCluster gives the webhook receiver the GitRepositories (with their webhook
// secrets) and wakes the ones a delivery matched.
type WebhookCluster struct {
	// Client lists GitRepositories (cached) and patches them.
	Client client.Client
	// APIReader reads the webhook Secrets uncached.
	APIReader client.Reader
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Repositories lists every GitRepository with the `token` of its webhookSecretRef.
// A Secret that cannot be read leaves the repository without a secret: no delivery
// signed for it wakes it.
func (c *WebhookCluster) Repositories(ctx context.Context) ([]webhook.Repository, error) {
	list := &gitsyncv1.GitRepositoryList{}
	if err := c.Client.List(ctx, list); err != nil {
		return nil, err
	}
	secrets := map[types.NamespacedName][]byte{}
	repos := make([]webhook.Repository, 0, len(list.Items))
	for _, gr := range list.Items {
		repo := webhook.Repository{Namespace: gr.Namespace, Name: gr.Name, URL: gr.Spec.URL}
		if ref := gr.Spec.Ref; ref != nil {
			repo.Branch, repo.Tag, repo.SemVer, repo.Commit = ref.Branch, ref.Tag, ref.SemVer, ref.Commit
		}
		if gr.Spec.WebhookSecretRef != nil {
			key := types.NamespacedName{Namespace: gr.Namespace, Name: gr.Spec.WebhookSecretRef.Name}
			token, ok := secrets[key]
			if !ok {
				secret := &corev1.Secret{}
				if err := c.APIReader.Get(ctx, key, secret); err != nil {
					ctrl.LoggerFrom(ctx).Info("webhook secret not readable", "secret", key.String(), "error", err.Error())
				} else {
					token = secret.Data["token"]
				}
				secrets[key] = token
			}
			repo.Secret = token
		}
		repos = append(repos, repo)
	}
	return repos, nil
}

// Wake sets gitsync.dev/requested-at on the GitRepository: it polls at once, and a new
// commit flows to its Applications.
func (c *WebhookCluster) Wake(ctx context.Context, namespace, name string) error {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	repo := &gitsyncv1.GitRepository{}
	repo.Namespace, repo.Name = namespace, name
	patch := []byte(`{"metadata":{"annotations":{"` + gitsyncv1.RequestedAtAnnotation + `":"` + now().UTC().Format(time.RFC3339Nano) + `"}}}`)
	return client.IgnoreNotFound(c.Client.Patch(ctx, repo, client.RawPatch(types.MergePatchType, patch)))
}
