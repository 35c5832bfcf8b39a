package bundle

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/gitsync-dev/gitsync/config"
)

const (
	// Package is the OLM package name.
	Package = "gitsync"
	// Channel is the bundle's (default) channel.
	Channel = "alpha"
	// CSVFile is the ClusterServiceVersion's path in the bundle.
	CSVFile = "manifests/gitsync.clusterserviceversion.yaml"
)

// Generate renders the bundle of version (semver without "v") with the manager image:
// file path (relative to bundle/) → content. Everything comes from config/default (the
// embedded copy): the CRDs, the manager's ClusterRole and leader-election Role as the
// install strategy's permissions, its Deployment, and its Service.
func Generate(version, image string) (map[string][]byte, error) {
	objs, err := config.Install()
	if err != nil {
		return nil, err
	}
	examples, err := almExamples()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	csv := &CSV{
		TypeMeta: metav1.TypeMeta{APIVersion: "operators.coreos.com/v1alpha1", Kind: "ClusterServiceVersion"},
		ObjectMeta: metav1.ObjectMeta{
			Name: Package + ".v" + version,
			Annotations: map[string]string{
				"alm-examples":   examples,
				"capabilities":   "Basic Install",
				"categories":     "Developer Tools",
				"containerImage": image,
				"repository":     "https://github.com/gitsync-dev/gitsync",
				"description":    "GitOps operator: keeps a Kubernetes cluster equal to Git, with drift detected and corrected within a second.",
			},
		},
		Spec: CSVSpec{
			DisplayName: "gitsync",
			Description: "gitsync keeps a cluster equal to Git: a GitRepository is polled (or woken by a push webhook), " +
				"an Application builds a path of it (plain YAML or kustomize), dry-runs it, server-side-applies it, prunes what left Git, " +
				"and watches what it applied so that drift is corrected (or reported) at once.",
			Version:        version,
			MinKubeVersion: "1.30.0",
			Maturity:       Channel,
			Keywords:       []string{"gitops", "git", "kustomize", "continuous delivery", "drift"},
			Provider:       AppLink{Name: "gitsync-dev"},
			Links:          []AppLink{{Name: "Source", URL: "https://github.com/gitsync-dev/gitsync"}},
			Maintainers:    []Maintainer{{Name: "gitsync maintainers", Email: "maintainers@gitsync.dev"}},
			InstallModes: []InstallMode{
				{Type: "OwnNamespace", Supported: false}, {Type: "SingleNamespace", Supported: false},
				{Type: "MultiNamespace", Supported: false}, {Type: "AllNamespaces", Supported: true},
			},
			Install: NamedInstallStrategy{Strategy: "deployment"},
		},
	}
	bindings := map[string]string{} // (Cluster)Role name → service account
	for _, obj := range objs {
		if k := obj.GetKind(); k == "ClusterRoleBinding" || k == "RoleBinding" {
			b := &rbacv1.RoleBinding{}
			if err := fromUnstructured(obj, b); err != nil {
				return nil, err
			}
			for _, s := range b.Subjects {
				if s.Kind == "ServiceAccount" {
					bindings[b.RoleRef.Kind+"/"+b.RoleRef.Name] = s.Name
				}
			}
		}
	}
	for _, obj := range objs {
		switch obj.GetKind() {
		case "CustomResourceDefinition":
			desc, err := crdDescription(obj)
			if err != nil {
				return nil, err
			}
			csv.Spec.CustomResourceDefinitions.Owned = append(csv.Spec.CustomResourceDefinitions.Owned, desc)
			if files["manifests/"+obj.GetName()+".crd.yaml"], err = yaml.Marshal(obj.Object); err != nil {
				return nil, err
			}
		case "ClusterRole", "Role":
			role := &rbacv1.ClusterRole{}
			if err := fromUnstructured(obj, role); err != nil {
				return nil, err
			}
			sa, ok := bindings[obj.GetKind()+"/"+obj.GetName()]
			if !ok {
				return nil, fmt.Errorf("%s %s is bound to no service account", obj.GetKind(), obj.GetName())
			}
			p := Permissions{ServiceAccountName: sa, Rules: role.Rules}
			if obj.GetKind() == "ClusterRole" {
				csv.Spec.Install.Spec.ClusterPermissions = append(csv.Spec.Install.Spec.ClusterPermissions, p)
			} else {
				csv.Spec.Install.Spec.Permissions = append(csv.Spec.Install.Spec.Permissions, p)
			}
		case "Deployment":
			d := &appsv1.Deployment{}
			if err := fromUnstructured(obj, d); err != nil {
				return nil, err
			}
			for i := range d.Spec.Template.Spec.Containers {
				if d.Spec.Template.Spec.Containers[i].Name == "manager" {
					d.Spec.Template.Spec.Containers[i].Image = image
				}
			}
			csv.Spec.Install.Spec.DeploymentSpecs = append(csv.Spec.Install.Spec.DeploymentSpecs,
				DeploymentSpec{Name: d.Name, Label: d.Labels, Spec: d.Spec})
		case "Service":
			svc := obj.DeepCopy()
			svc.SetNamespace("") // OLM installs into the OperatorGroup's namespace
			data, err := yaml.Marshal(svc.Object)
			if err != nil {
				return nil, err
			}
			files["manifests/"+obj.GetName()+"_v1_service.yaml"] = data
		}
	}
	sort.Slice(csv.Spec.CustomResourceDefinitions.Owned, func(i, j int) bool {
		return csv.Spec.CustomResourceDefinitions.Owned[i].Name < csv.Spec.CustomResourceDefinitions.Owned[j].Name
	})
	data, err := yaml.Marshal(csv)
	if err != nil {
		return nil, err
	}
	files[CSVFile] = data
	files["metadata/annotations.yaml"] = []byte(strings.Join([]string{
		"annotations:",
		"  operators.operatorframework.io.bundle.mediatype.v1: registry+v1",
		"  operators.operatorframework.io.bundle.manifests.v1: manifests/",
		"  operators.operatorframework.io.bundle.metadata.v1: metadata/",
		"  operators.operatorframework.io.bundle.package.v1: " + Package,
		"  operators.operatorframework.io.bundle.channels.v1: " + Channel,
		"  operators.operatorframework.io.bundle.channel.default.v1: " + Channel,
		"",
	}, "\n"))
	return files, nil
}

// almExamples is the CSV's alm-examples annotation: config/samples as a JSON array, an
// example of every kind for OLM's console.
func almExamples() (string, error) {
	samples, err := config.Samples()
	if err != nil {
		return "", err
	}
	list := make([]map[string]any, 0, len(samples))
	for _, s := range samples {
		list = append(list, s.Object)
	}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encoding alm-examples: %w", err)
	}
	return string(data), nil
}

func fromUnstructured(obj *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
		return fmt.Errorf("decoding %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

// crdDescription describes an owned CRD: its storage version, kind and the schema's
// description.
func crdDescription(obj *unstructured.Unstructured) (CRDDescription, error) {
	kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
	versions, _, _ := unstructured.NestedSlice(obj.Object, "spec", "versions")
	d := CRDDescription{Name: obj.GetName(), Kind: kind, DisplayName: kind}
	for _, v := range versions {
		m, ok := v.(map[string]any)
		if !ok || m["storage"] != true {
			continue
		}
		d.Version, _ = m["name"].(string)
		d.Description, _, _ = unstructured.NestedString(m, "schema", "openAPIV3Schema", "description")
	}
	if d.Version == "" {
		return d, fmt.Errorf("CRD %s has no storage version", obj.GetName())
	}
	return d, nil
}

// Write replaces the bundle in dir with files.
func Write(dir string, files map[string][]byte) error {
	for _, sub := range []string{"manifests", "metadata"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return fmt.Errorf("clearing %s: %w", sub, err)
		}
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}
