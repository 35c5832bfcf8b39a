package v1beta1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Provider types.
const (
	ProviderSlack   = "slack"
	ProviderMSTeams = "msteams"
	ProviderDiscord = "discord"
	ProviderGeneric = "generic"
	ProviderGitHub  = "github"
	ProviderGitLab  = "gitlab"
	ProviderGitea   = "gitea"
)

// DefaultProviderTimeout bounds one delivery when spec.timeout is unset.
const DefaultProviderTimeout = 15 * time.Second

// ProviderSpec says where and how notifications are delivered.
type ProviderSpec struct {
	// type of the receiving service: slack, msteams, discord, generic (a signed JSON POST),
	// or github, gitlab, gitea (commit statuses on the synced commit).
	// +required
	// +kubebuilder:validation:Enum=slack;msteams;discord;generic;github;gitlab;gitea
	Type string `json:"type"`

	// address is the URL deliveries go to: the webhook URL (slack, msteams, discord,
	// generic), or the forge's API base URL (github: https://api.github.com; gitlab:
	// https://gitlab.com; gitea: the server's URL). The Secret's `address` overrides it.
	// For slack with a token, https://slack.com/api/chat.postMessage is used when empty.
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://.+`
	Address string `json:"address,omitempty"`

	// channel is the Slack channel (chat.postMessage with a token) or the name shown as
	// the sender where the service supports one.
	// +optional
	Channel string `json:"channel,omitempty"`

	// proxy is an HTTP(S) proxy URL that deliveries go through.
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://.+`
	Proxy string `json:"proxy,omitempty"`

	// secretRef names a Secret in the same namespace with the keys `address` (the
	// delivery URL, kept out of the spec), `token` (Slack bot token, HMAC key of generic,
	// forge API token), `headers` (YAML map of extra HTTP headers) and `ca.crt` (a CA
	// bundle to trust). Its values never appear in status, events or delivered bodies.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`

	// timeout bounds one delivery attempt.
	// +optional
	// +kubebuilder:default="15s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// suspend stops deliveries through this Provider while true.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// ProviderStatus is the observed state of a Provider.
type ProviderStatus struct {
	// observedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (False with the last delivery error, e.g. the status code).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Provider is a destination for notifications: a chat service, a generic webhook or a
// forge's commit status API.
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Provider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProviderSpec   `json:"spec,omitempty"`
	Status ProviderStatus `json:"status,omitempty"`
}

// GetConditions returns the status conditions.
func (in *Provider) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *Provider) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetTimeout returns spec.timeout, or its default when unset.
func (in *Provider) GetTimeout() metav1.Duration {
	return durationOr(in.Spec.Timeout, DefaultProviderTimeout)
}

// ProviderList is a list of Providers.
// +kubebuilder:object:root=true
type ProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Provider `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Provider{}, &ProviderList{})
}
