package sources

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/webhook"
)

// WebhookCluster gives the webhook receiver the GitRepositories and the webhook
// secrets of the ones a delivery names, and wakes the ones it matched.
type WebhookCluster struct {
	// Client lists GitRepositories (cached) and patches them.
	Client client.Client
	// APIReader reads a webhook Secret's data, uncached, when it is not known yet
	// or its resourceVersion changed.
	APIReader client.Reader
	// SecretMetadata reads Secrets as metav1.PartialObjectMetadata from the
	// manager's cache (mgr.GetCache(): the metadata-only Secret informer the
	// GitRepository controller watches; Secret data never enters it). A token is
	// read again only when the Secret's resourceVersion there changed. nil: every
	// delivery reads its candidates' Secrets through APIReader.
	SecretMetadata client.Reader
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu      sync.Mutex
	secrets map[types.NamespacedName]cachedToken
}

// cachedToken is the `token` of a Secret at one resourceVersion.
type cachedToken struct {
	resourceVersion string
	token           []byte
}

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Repositories lists every GitRepository (from the cache), without secrets.
func (c *WebhookCluster) Repositories(ctx context.Context) ([]webhook.Repository, error) {
	list := &gitsyncv1.GitRepositoryList{}
	if err := c.Client.List(ctx, list); err != nil {
		return nil, err
	}
	repos := make([]webhook.Repository, 0, len(list.Items))
	for _, gr := range list.Items {
		repo := webhook.Repository{Namespace: gr.Namespace, Name: gr.Name, URL: gr.Spec.URL}
		if ref := gr.Spec.Ref; ref != nil {
			repo.Branch, repo.Tag, repo.SemVer, repo.Commit = ref.Branch, ref.Tag, ref.SemVer, ref.Commit
		}
		if gr.Spec.WebhookSecretRef != nil {
			repo.SecretName = gr.Spec.WebhookSecretRef.Name
		}
		repos = append(repos, repo)
	}
	return repos, nil
}

// WebhookSecret returns the `token` of the Secret namespace/name. It reads the
// Secret only when its resourceVersion in the metadata cache differs from the
// one it read last. A Secret that cannot be read is no secret (nil): no delivery
// signed for it wakes its repositories.
func (c *WebhookCluster) WebhookSecret(ctx context.Context, namespace, name string) ([]byte, error) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	log := ctrl.LoggerFrom(ctx)
	if c.SecretMetadata != nil {
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		err := c.SecretMetadata.Get(ctx, key, meta)
		switch {
		case apierrors.IsNotFound(err):
			c.forget(key)
			log.V(1).Info("webhook secret not found", "secret", key.String())
			return nil, nil
		case err != nil:
			log.Info("webhook secret metadata not readable", "secret", key.String(), "error", err.Error())
		default:
			if token, ok := c.cached(key, meta.ResourceVersion); ok {
				return token, nil
			}
		}
	}
	secret := &corev1.Secret{}
	if err := c.APIReader.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(key)
		}
		log.Info("webhook secret not readable", "secret", key.String(), "error", err.Error())
		return nil, nil
	}
	token := secret.Data["token"]
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.secrets == nil {
		c.secrets = map[types.NamespacedName]cachedToken{}
	}
	c.secrets[key] = cachedToken{resourceVersion: secret.ResourceVersion, token: token}
	return token, nil
}

func (c *WebhookCluster) cached(key types.NamespacedName, resourceVersion string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.secrets[key]
	if !ok || resourceVersion == "" || t.resourceVersion != resourceVersion {
		return nil, false
	}
	return t.token, true
}

func (c *WebhookCluster) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.secrets, key)
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
	base := client.MergeFrom(repo.DeepCopy())
	gitsyncv1.RequestReconcile(repo, now())
	return client.IgnoreNotFound(c.Client.Patch(ctx, repo, base))
}
