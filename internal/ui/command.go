package ui

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/gitsync-dev/gitsync/internal/operations"
)

// Kube is how a command reaches the cluster as the person running it: the CLI's
// kubeconfig flags (cli.Kube).
type Kube interface {
	RESTConfig() (*rest.Config, error)
	Scheme() *runtime.Scheme
	// NamespaceFlag is -n when given, else "".
	NamespaceFlag() string
}

// NewCommand is `gitsync ui`: the web UI served locally with k's identity, its URL
// printed to out.
func NewCommand(k Kube, out io.Writer) *cobra.Command {
	var address string
	var allowRemote bool
	cmd := &cobra.Command{
		Use:   "ui [--address 127.0.0.1:9080] [--allow-remote]",
		Short: "Serve the web UI locally with your kubeconfig's identity (Kubernetes RBAC applies as for kubectl)",
		Long: `Serves the web UI: applications, each one's resource tree with live diffs and drift,
and sources, updated live. It reads the cluster as you (your kubeconfig), so it shows only
what you may list; sync, suspend and resume appear only where you may patch the Application.

It listens on loopback only (unless --allow-remote), and answers only requests that carry
this launch's token: open the URL it prints (http://127.0.0.1:9080/?token=...), which
keeps the token in a cookie. Requests that name another host (DNS rebinding) are refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !allowRemote && !loopbackAddress(address) {
				return fmt.Errorf("--address %s is not a loopback address: the UI reads the cluster as you; "+
					"add --allow-remote to serve it beyond this machine (the launch token is still needed)", address)
			}
			return runLocal(cmd.Context(), k, address, out)
		},
	}
	cmd.Flags().StringVar(&address, "address", "127.0.0.1:9080", "address to listen on (loopback unless --allow-remote)")
	cmd.Flags().BoolVar(&allowRemote, "allow-remote", false, "allow an --address that is not loopback")
	return cmd
}

// loopbackAddress says whether addr (host:port) listens on loopback only: localhost or a
// loopback IP. An empty host or 0.0.0.0 listens everywhere; other names are not resolved.
func loopbackAddress(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// runLocal serves the UI at address with k's identity; diffs are rendered from the
// source (operations.ObjectDiffsFromSource).
func runLocal(ctx context.Context, k Kube, address string, out io.Writer) error {
	cfg, err := k.RESTConfig()
	if err != nil {
		return err
	}
	var namespaces []string
	if ns := k.NamespaceFlag(); ns != "" {
		namespaces = []string{ns}
	}
	srv, err := New(ctx, cfg, k.Scheme(), Options{Diff: operations.ObjectDiffsFromSource, Namespaces: namespaces})
	if err != nil {
		return err
	}
	return srv.Run(ctx, address, func(url string) {
		fmt.Fprintf(out, "gitsync ui: %s (Ctrl-C to stop)\n", url)
	})
}
