package cli

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	sops "github.com/gitsync-dev/gitsync/internal/decrypt"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

func (o *options) newUICommand() *cobra.Command {
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
			return o.runUI(cmd.Context(), address)
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

func (o *options) runUI(ctx context.Context, address string) error {
	cfg, err := o.restConfig()
	if err != nil {
		return err
	}
	var namespaces []string
	if o.flags.Namespace != nil && *o.flags.Namespace != "" {
		namespaces = []string{*o.flags.Namespace}
	}
	srv, err := ui.New(ctx, cfg, o.scheme, ui.Options{Diff: UIDiff, Namespaces: namespaces})
	if err != nil {
		return err
	}
	return srv.Run(ctx, address, func(url string) {
		fmt.Fprintf(o.Out, "gitsync ui: %s (Ctrl-C to stop)\n", url)
	})
}

// UIDiff renders app from its source's current revision as `gitsync diff` does and
// compares the objects want selects with the cluster (apply.Manager.Compare +
// drift.Diff), with Secret values masked. The web UI shows it.
func UIDiff(ctx context.Context, cfg *rest.Config, c client.Client, app *gitsyncv1.Application, want func(subject string) bool) ([]ui.ObjectDiff, error) {
	// The UI never decrypts: SOPS documents stay encrypted and are not compared. A chart's
	// lookup finds nothing: the viewer's rights must not be lent to a tenant's chart.
	r, err := renderFromSource(ctx, c, app, pinnedRevision(app), clusterOf(cfg, c, app, false, false), false)
	if err != nil {
		return nil, err
	}
	// SOPS documents left encrypted (the UI never decrypts) are not compared.
	objs := make([]*unstructured.Unstructured, 0, len(r.objects))
	for _, o := range r.objects {
		if !sops.IsEncrypted(o) {
			objs = append(objs, o)
		}
	}
	diffs, err := ui.ObjectDiffs(ctx, c, app, objs, want)
	if err != nil {
		return nil, err
	}
	for i := range diffs {
		d := &diffs[i]
		d.Git, d.Live, d.Diff = maskValues(d.Git, r.sensitive), maskValues(d.Live, r.sensitive), maskValues(d.Diff, r.sensitive)
	}
	return append(diffs, ui.Pruned(app, r.objects, want)...), nil
}
