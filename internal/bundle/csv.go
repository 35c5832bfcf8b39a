// Package bundle generates gitsync's OLM bundle (bundle/: a ClusterServiceVersion, the CRDs, metadata) from config/.
package bundle

import (
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The few ClusterServiceVersion types gitsync needs (operators.coreos.com/v1alpha1),
// written here because github.com/operator-framework/api is not available from the
// module proxy this project builds with. Field names follow that API.

// CSV is a ClusterServiceVersion.
type CSV struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              CSVSpec `json:"spec"`
}

// CSVSpec is the spec of a ClusterServiceVersion.
type CSVSpec struct {
	DisplayName               string                    `json:"displayName"`
	Description               string                    `json:"description"`
	Version                   string                    `json:"version"`
	MinKubeVersion            string                    `json:"minKubeVersion,omitempty"`
	Maturity                  string                    `json:"maturity,omitempty"`
	Keywords                  []string                  `json:"keywords,omitempty"`
	Provider                  AppLink                   `json:"provider"`
	Links                     []AppLink                 `json:"links,omitempty"`
	Maintainers               []Maintainer              `json:"maintainers,omitempty"`
	InstallModes              []InstallMode             `json:"installModes"`
	Install                   NamedInstallStrategy      `json:"install"`
	CustomResourceDefinitions CustomResourceDefinitions `json:"customresourcedefinitions"`
}

// AppLink is a name and a URL.
type AppLink struct {
	Name string `json:"name"`
	URL  string `json:"url,omitempty"`
}

// Maintainer of the operator.
type Maintainer struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

// InstallMode says whether the operator supports a target namespace selection.
type InstallMode struct {
	Type      string `json:"type"`
	Supported bool   `json:"supported"`
}

// NamedInstallStrategy is the install strategy ("deployment").
type NamedInstallStrategy struct {
	Strategy string                    `json:"strategy"`
	Spec     StrategyDetailsDeployment `json:"spec"`
}

// StrategyDetailsDeployment holds the Deployments and the RBAC OLM creates.
type StrategyDetailsDeployment struct {
	DeploymentSpecs    []DeploymentSpec `json:"deployments"`
	Permissions        []Permissions    `json:"permissions,omitempty"`
	ClusterPermissions []Permissions    `json:"clusterPermissions,omitempty"`
}

// DeploymentSpec is one named Deployment.
type DeploymentSpec struct {
	Name  string                `json:"name"`
	Label map[string]string     `json:"label,omitempty"`
	Spec  appsv1.DeploymentSpec `json:"spec"`
}

// Permissions are the rules granted to a service account.
type Permissions struct {
	ServiceAccountName string              `json:"serviceAccountName"`
	Rules              []rbacv1.PolicyRule `json:"rules"`
}

// CustomResourceDefinitions lists the CRDs the operator owns.
type CustomResourceDefinitions struct {
	Owned []CRDDescription `json:"owned,omitempty"`
}

// CRDDescription describes one owned CRD.
type CRDDescription struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Kind        string `json:"kind"`
	DisplayName string `json:"displayName,omitempty"`
	Description string `json:"description,omitempty"`
}
