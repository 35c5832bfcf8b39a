package cluster

import (
	"fmt"
	"net/url"
	"sort"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gitsync-dev/gitsync/internal/egress"
)

// MaxKubeConfigSize bounds the kubeconfig read from a Secret (a Secret holds at most
// 1 MiB; a kubeconfig with certificates is a few KiB).
const MaxKubeConfigSize = 256 << 10

// RESTConfig checks a tenant's kubeconfig and returns the *rest.Config of its current
// context. Refused: exec plugins and auth-provider entries (they would run commands or
// plugins inside the operator), any file path (token, certificate, key or CA files would
// read the operator's own disk, its service account token included), a proxy, and a
// server that is not an http(s) URL with a host. The config dials through guard (nil: no
// egress guard); a server that is an IP literal in a denied range is refused at once.
func RESTConfig(data []byte, guard *egress.Guard) (*rest.Config, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("the kubeconfig is empty")
	}
	if len(data) > MaxKubeConfigSize {
		return nil, fmt.Errorf("the kubeconfig is %d bytes, more than the %d allowed", len(data), MaxKubeConfigSize)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("parsing the kubeconfig: %w", err)
	}
	name := cfg.CurrentContext
	if name == "" && len(cfg.Contexts) == 1 {
		for n := range cfg.Contexts {
			name = n
		}
	}
	kctx, ok := cfg.Contexts[name]
	if !ok {
		return nil, fmt.Errorf("the kubeconfig has no current context (contexts: %v)", contextNames(cfg))
	}
	cl, ok := cfg.Clusters[kctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("the kubeconfig's context %q names cluster %q, which it does not define", name, kctx.Cluster)
	}
	user, ok := cfg.AuthInfos[kctx.AuthInfo]
	if !ok && kctx.AuthInfo != "" {
		return nil, fmt.Errorf("the kubeconfig's context %q names user %q, which it does not define", name, kctx.AuthInfo)
	}
	if err := checkCluster(cl, guard); err != nil {
		return nil, err
	}
	if user != nil {
		if err := checkUser(kctx.AuthInfo, user); err != nil {
			return nil, err
		}
	}
	// Only the checked entries go on: nothing else of the file is read.
	only := clientcmdapi.NewConfig()
	only.Clusters["c"] = cl
	if user != nil {
		only.AuthInfos["u"] = user
	}
	only.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: kctx.Namespace}
	only.CurrentContext = "x"
	rc, err := clientcmd.NewDefaultClientConfig(*only, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	rc.Dial = guard.Dialer().DialContext
	rc.Proxy = nil
	return rc, nil
}

// checkCluster refuses a server that is not http(s), a CA file, a proxy, or a server
// address the egress guard denies.
func checkCluster(cl *clientcmdapi.Cluster, guard *egress.Guard) error {
	u, err := url.Parse(cl.Server)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("the kubeconfig's server %q is not an http(s) URL", cl.Server)
	}
	if cl.CertificateAuthority != "" {
		return fmt.Errorf("the kubeconfig names a certificate-authority file: put the certificate in certificate-authority-data")
	}
	if cl.ProxyURL != "" {
		return fmt.Errorf("the kubeconfig sets proxy-url: proxies are not allowed")
	}
	if err := guard.CheckHost(u.Host); err != nil {
		return fmt.Errorf("the kubeconfig's server %s: %w", u.Host, err)
	}
	return nil
}

// checkUser refuses what would run or read something in the operator.
func checkUser(name string, u *clientcmdapi.AuthInfo) error {
	switch {
	case u.Exec != nil:
		return fmt.Errorf("the kubeconfig's user %q uses an exec plugin (%q): exec plugins are not allowed, use a token or a client certificate", name, u.Exec.Command)
	case u.AuthProvider != nil:
		return fmt.Errorf("the kubeconfig's user %q uses the auth provider %q: auth providers are not allowed, use a token or a client certificate", name, u.AuthProvider.Name)
	case u.TokenFile != "":
		return fmt.Errorf("the kubeconfig's user %q names a token file: put the token in token", name)
	case u.ClientCertificate != "" || u.ClientKey != "":
		return fmt.Errorf("the kubeconfig's user %q names certificate or key files: use client-certificate-data and client-key-data", name)
	}
	return nil
}

func contextNames(cfg *clientcmdapi.Config) []string {
	names := make([]string, 0, len(cfg.Contexts))
	for n := range cfg.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
