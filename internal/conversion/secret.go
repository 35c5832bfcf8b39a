package conversion

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// The Secret's keys (cert-controller's).
const (
	certKey = corev1.TLSCertKey
	keyKey  = corev1.TLSPrivateKeyKey
)

// ensureSecret creates the empty Secret the rotator fills: cert-controller only
// updates it.
func ensureSecret(ctx context.Context, c client.Client, key types.NamespacedName) error {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{"app.kubernetes.io/name": "gitsync", "app.kubernetes.io/component": "conversion-webhook"}},
		Type: corev1.SecretTypeOpaque,
	}
	if err := c.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("conversion webhook: creating the Secret %s: %w", key, err)
	}
	return nil
}

// webhookCRDs tells whether the CRDs name a conversion webhook: all of them (true, with
// the Service they name, nil for a URL), none (false), or only some or different
// Services (an error: cert-controller could not inject the CA into the others, and would
// stop the manager after 17 minutes or more of retries).
func webhookCRDs(ctx context.Context, c client.Client, names []string) (bool, *apiextensionsv1.ServiceReference, error) {
	var with, without []string
	var service *apiextensionsv1.ServiceReference
	for _, name := range names {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return false, nil, fmt.Errorf("conversion webhook: reading the CRD %s: %w", name, err)
		}
		cv := crd.Spec.Conversion
		if cv == nil || cv.Strategy != apiextensionsv1.WebhookConverter || cv.Webhook == nil || cv.Webhook.ClientConfig == nil {
			without = append(without, name)
			continue
		}
		if svc := cv.Webhook.ClientConfig.Service; len(with) > 0 && !reflect.DeepEqual(svc, service) {
			return false, nil, fmt.Errorf("conversion webhook: the CRDs %s and %s name different webhooks", with[0], name)
		}
		service = cv.Webhook.ClientConfig.Service
		with = append(with, name)
	}
	if len(with) > 0 && len(without) > 0 {
		return false, nil, fmt.Errorf("conversion webhook: the CRDs %v name one, %v do not: install all of config/crd", with, without)
	}
	return len(with) > 0, service, nil
}

// secretWatch follows the Secret: each certificate it holds is served from memory at
// once and written to certDir (where cert-controller checks that it arrived, as it would
// for a mounted Secret).
type secretWatch struct {
	config  *rest.Config
	key     types.NamespacedName
	certDir string
	cert    *atomic.Pointer[tls.Certificate]
}

// NeedLeaderElection is false: every replica serves the webhook.
func (s *secretWatch) NeedLeaderElection() bool { return false }

// Start watches the Secret until ctx ends. The informer lists and watches this one
// Secret through a core/v1 REST client, not client-go's Clientset and informer factory:
// those hold every API group's typed client, informer and lister behind interfaces, so
// the linker keeps all of them (about 9 MiB of the binary, most of it resident) for one
// watch.
func (s *secretWatch) Start(ctx context.Context) error {
	core, err := corev1client.NewForConfig(s.config)
	if err != nil {
		return err
	}
	lw := toolscache.NewListWatchFromClient(core.RESTClient(), "secrets", s.key.Namespace,
		fields.OneTermEqualSelector("metadata.name", s.key.Name))
	inf := toolscache.NewSharedIndexInformer(lw, &corev1.Secret{}, 0, toolscache.Indexers{})
	handle := func(obj any) {
		if secret, ok := obj.(*corev1.Secret); ok {
			s.load(ctx, secret)
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
	}); err != nil {
		return err
	}
	inf.RunWithContext(ctx)
	return nil
}

// load serves the Secret's certificate, when it holds a valid one, and writes it to certDir.
func (s *secretWatch) load(ctx context.Context, secret *corev1.Secret) {
	log := logf.FromContext(ctx).WithName("conversion-webhook")
	certPEM, keyPEM := secret.Data[certKey], secret.Data[keyKey]
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		log.Error(err, "the conversion webhook's Secret holds no valid certificate", "secret", s.key)
		return
	}
	s.cert.Store(&pair)
	if err := writeFiles(s.certDir, map[string][]byte{keyKey: keyPEM, certKey: certPEM}); err != nil {
		log.Error(err, "writing the conversion webhook's certificate", "dir", s.certDir)
		return
	}
	log.V(1).Info("conversion webhook certificate loaded", "notAfter", pair.Leaf.NotAfter)
}

// writeFiles replaces each file of dir (created if needed) by a rename, so that a reader
// never sees half a file.
func writeFiles(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, data := range files {
		tmp, err := os.CreateTemp(dir, "."+name+"-")
		if err != nil {
			return err
		}
		_, werr := tmp.Write(data)
		cerr := tmp.Close()
		if err := errors.Join(werr, cerr); err != nil {
			_ = os.Remove(tmp.Name())
			return err
		}
		if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
			_ = os.Remove(tmp.Name())
			return err
		}
	}
	return nil
}
