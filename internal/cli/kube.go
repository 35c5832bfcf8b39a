package cli

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kube is the CLI's way to the cluster, for the tools other packages make (Tool): the
// kubeconfig flags and the one client of the process.
type Kube struct{ o *options }

// RESTConfig is the kubeconfig flags' configuration.
func (k Kube) RESTConfig() (*rest.Config, error) { return k.o.restConfig() }

// Client is the process's direct client, that can also watch (made on first use).
func (k Kube) Client() (client.WithWatch, error) { return k.o.client() }

// Namespace is -n, else the kubeconfig context's namespace, else "default".
func (k Kube) Namespace() (string, error) { return k.o.namespace() }

// NamespaceFlag is -n when given, else "".
func (k Kube) NamespaceFlag() string {
	if k.o.flags.Namespace == nil {
		return ""
	}
	return *k.o.flags.Namespace
}

// Scheme holds gitsync's kinds and Kubernetes' built-in ones.
func (k Kube) Scheme() *runtime.Scheme { return k.o.scheme }

// Version is the CLI's version (the release, or the module's, or "dev").
func (k Kube) Version() string { return clientVersion() }
