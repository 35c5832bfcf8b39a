package cluster

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/gitsync-dev/gitsync/internal/egress"
)

func kubeconfig(server, user string) []byte {
	return []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: "` + server + `"
users:
- name: u
  user:
` + user + `
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`)
}

func TestRESTConfigRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, server, user, want string
	}{
		{"exec plugin", "https://k8s.example.com", "    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, id], interactiveMode: Never}",
			`uses an exec plugin ("/bin/sh"): exec plugins are not allowed`},
		{"auth provider", "https://k8s.example.com", "    auth-provider: {name: gcp}", `uses the auth provider "gcp": auth providers are not allowed`},
		{"token file", "https://k8s.example.com", "    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token", "names a token file"},
		{"client key file", "https://k8s.example.com", "    client-key: /etc/key.pem", "names certificate or key files"},
		{"file server", "file:///etc/passwd", "    token: t", "is not an http(s) URL"},
		{"unix server", "unix:///var/run/x.sock", "    token: t", "is not an http(s) URL"},
		{"no host", "https://", "    token: t", "is not an http(s) URL"},
		{"denied address", "https://127.0.0.1:6443", "    token: t", "refused by --deny-egress"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			guard := egress.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
			_, err := RESTConfig(kubeconfig(tc.server, tc.user), guard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

func TestRESTConfigRefusesProxyAndCAFile(t *testing.T) {
	for _, extra := range []string{"    proxy-url: http://proxy:3128", "    certificate-authority: /etc/ca.pem"} {
		data := strings.Replace(string(kubeconfig("https://k8s.example.com", "    token: t")),
			`    server: "https://k8s.example.com"`, `    server: "https://k8s.example.com"`+"\n"+extra, 1)
		if _, err := RESTConfig([]byte(data), nil); err == nil {
			t.Fatalf("%s: accepted", extra)
		}
	}
}

func TestRESTConfigRefusesEmptyAndHuge(t *testing.T) {
	if _, err := RESTConfig(nil, nil); err == nil {
		t.Fatal("empty kubeconfig accepted")
	}
	if _, err := RESTConfig(make([]byte, MaxKubeConfigSize+1), nil); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("err = %v", err)
	}
}

func TestRESTConfigTokenAndData(t *testing.T) {
	cfg, err := RESTConfig(kubeconfig("https://k8s.example.com:6443", "    token: secret-token"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://k8s.example.com:6443" || cfg.BearerToken != "secret-token" {
		t.Fatalf("host %q token set %v", cfg.Host, cfg.BearerToken != "")
	}
	if cfg.Dial == nil || cfg.Proxy != nil || cfg.ExecProvider != nil || cfg.AuthProvider != nil {
		t.Fatalf("dial %v proxy %v exec %v auth %v", cfg.Dial != nil, cfg.Proxy != nil, cfg.ExecProvider, cfg.AuthProvider)
	}
}

func TestUserIdentity(t *testing.T) {
	tgt := &Target{}
	tgt.Key.Namespace = "team"
	if u := tgt.User("team", ""); u != "" {
		t.Fatalf("no service account: %q", u)
	}
	tgt.ServiceAccount = "deployer"
	if u := tgt.User("team", ""); u != "system:serviceaccount:team:deployer" {
		t.Fatalf("cluster's: %q", u)
	}
	if u := tgt.User("apps", "app-sa"); u != "system:serviceaccount:apps:app-sa" {
		t.Fatalf("application's: %q", u)
	}
}
