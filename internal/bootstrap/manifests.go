package bootstrap

import (
	"fmt"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/source"
)

// Names of what bootstrap writes.
const (
	// Name is the name of the GitRepository and the Application that keep gitsync
	// managed from Git.
	Name = "gitsync"
	// AuthSecretName is the Secret (applied to the cluster, never written to Git) with
	// the credentials of the repository.
	AuthSecretName = "gitsync-git-auth"
	// ManifestsFile holds gitsync's own manifests, as `gitsync install --export
	// --least-privilege=false` prints them: the sync Application applies gitsync's own install
	// as the manager's account, which must then be allowed to write it.
	ManifestsFile = "gitsync.yaml"
	// SyncFile holds the GitRepository and the Application.
	SyncFile = "sync.yaml"
)

// manager is where the manifests run the operator: its namespace and service account,
// and the tenant account of its --default-service-account (tenant mode; "" without).
type manager struct {
	namespace, serviceAccount, tenantAccount string
}

// managerOf finds the manager Deployment in objs.
func managerOf(objs []*unstructured.Unstructured) (manager, error) {
	for _, obj := range objs {
		if obj.GetKind() != "Deployment" {
			continue
		}
		sa, _, _ := unstructured.NestedString(obj.Object, "spec", "template", "spec", "serviceAccountName")
		if sa == "" {
			sa = "default"
		}
		return manager{namespace: obj.GetNamespace(), serviceAccount: sa, tenantAccount: defaultServiceAccount(obj)}, nil
	}
	return manager{}, fmt.Errorf("the install manifests hold no Deployment")
}

// defaultServiceAccount is the --default-service-account of the manager Deployment's
// container, or "".
func defaultServiceAccount(deploy *unstructured.Unstructured) string {
	containers, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		args, _, _ := unstructured.NestedStringSlice(c.(map[string]any), "args")
		for i, arg := range args {
			if v, ok := strings.CutPrefix(arg, "--default-service-account="); ok {
				return v
			}
			if arg == "--default-service-account" && i+1 < len(args) {
				return args[i+1]
			}
		}
	}
	return ""
}

// authSecretAccess lets the tenant account of the manager's namespace get the auth
// Secret (and nothing else): in tenant mode the operator reads a Secret that a
// GitRepository names only when that account may (gitsync run --check-secret-access).
func authSecretAccess(m manager) []*unstructured.Unstructured {
	if m.tenantAccount == "" {
		return nil
	}
	name := AuthSecretName + "-reader"
	meta := map[string]any{"name": name, "namespace": m.namespace}
	role := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta,
		"rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets"},
			"resourceNames": []any{AuthSecretName}, "verbs": []any{"get"}}},
	}}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": name, "namespace": m.namespace},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": m.tenantAccount, "namespace": m.namespace}},
	}}
	return []*unstructured.Unstructured{role, binding}
}

// cleanPath checks --path: a relative path inside the repository, returned without
// "./" or a trailing "/".
func cleanPath(p string) (string, error) {
	clean := path.Clean(strings.TrimPrefix(p, "./"))
	if p == "" || clean == "." || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("--path %q: want a directory inside the repository, e.g. clusters/my-cluster", p)
	}
	return clean, nil
}

// syncObjects are the GitRepository that reads o.URL at o.Branch and the Application
// that syncs dir (the whole --path, so that what else is committed below it is synced
// too) as the manager's own service account: under config/default's tenant mode
// (--default-service-account gitsync-tenant) an Application without
// serviceAccountName could not write CRDs, ClusterRoles or the manager's Deployment.
func syncObjects(o Options, dir string, m manager) []*unstructured.Unstructured {
	repoSpec := map[string]any{
		"url":      o.URL,
		"ref":      map[string]any{"branch": o.Branch},
		"interval": o.interval().String(),
	}
	if o.Auth != nil {
		repoSpec["secretRef"] = map[string]any{"name": AuthSecretName}
	}
	repo := newObject(gitsyncv1.GitRepositoryKind, m.namespace, repoSpec)
	app := newObject(gitsyncv1.ApplicationKind, m.namespace, map[string]any{
		"sourceRef":          map[string]any{"kind": gitsyncv1.GitRepositoryKind, "name": Name},
		"path":               dir,
		"prune":              true,
		"serviceAccountName": m.serviceAccount,
	})
	return []*unstructured.Unstructured{repo, app}
}

func newObject(kind, namespace string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gitsyncv1.GroupVersion.String(),
		"kind":       kind,
		"metadata":   map[string]any{"name": Name, "namespace": namespace},
		"spec":       spec,
	}}
}

// authSecret is the Secret of a, in the keys a GitRepository's secretRef reads.
func authSecret(a *source.Auth, namespace string) (*unstructured.Unstructured, error) {
	data := map[string][]byte{}
	for key, value := range map[string][]byte{
		source.SecretKeyUsername:    []byte(a.Username),
		source.SecretKeyPassword:    []byte(a.Password),
		source.SecretKeyBearerToken: []byte(a.BearerToken),
		source.SecretKeyIdentity:    a.Identity,
		source.SecretKeyKnownHosts:  a.KnownHosts,
		source.SecretKeyCA:          a.CA,
	} {
		if len(value) > 0 {
			data[key] = value
		}
	}
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: AuthSecretName, Namespace: namespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(secret)
	if err != nil {
		return nil, fmt.Errorf("encoding the Secret %s: %w", AuthSecretName, err)
	}
	obj := &unstructured.Unstructured{Object: u}
	unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
	return obj, nil
}

// interval is the GitRepository's poll interval.
func (o Options) interval() time.Duration {
	if o.Interval <= 0 {
		return time.Minute
	}
	return o.Interval
}
