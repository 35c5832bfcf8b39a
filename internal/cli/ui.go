package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1alpha1"
	"github.com/gitsync-dev/gitsync/internal/apply"
	sops "github.com/gitsync-dev/gitsync/internal/decrypt"
	"github.com/gitsync-dev/gitsync/internal/drift"
	"github.com/gitsync-dev/gitsync/internal/render"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

func (o *options) newUICommand() *cobra.Command {
	var address string
	cmd := &cobra.Command{
		Use:   "ui [--address 127.0.0.1:9080]",
		Short: "Serve the web UI locally with your kubeconfig's identity (Kubernetes RBAC applies as for kubectl)",
		Long: `Serves the web UI: applications, each one's resource tree with live diffs and drift,
and sources, updated live. It reads the cluster as you (your kubeconfig), so it shows only
what you may list; sync, suspend and resume appear only where you may patch the Application.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.runUI(cmd.Context(), address)
		},
	}
	cmd.Flags().StringVar(&address, "address", "127.0.0.1:9080", "address to listen on")
	return cmd
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
	// The UI never decrypts: SOPS documents stay encrypted and are not compared.
	r, err := renderFromSource(ctx, c, app, pinnedRevision(app), clusterOf(cfg, c, app, false), false)
	if err != nil {
		return nil, err
	}
	manager := apply.New(c, c, apply.Owner{Name: app.Name, Namespace: app.Namespace})
	var out []ui.ObjectDiff
	for _, obj := range r.objects {
		subject := apply.Subject(obj)
		if !want(subject) || sops.IsEncrypted(obj) {
			continue
		}
		d := ui.ObjectDiff{Subject: subject, Action: "created"}
		ignore := render.IgnorePointers(app, obj)
		live, desired, err := manager.Compare(ctx, obj)
		if err != nil {
			return nil, err
		}
		git := forDisplay(obj, ignore)
		if live != nil {
			git = forDisplay(desired, ignore)
			fields, err := drift.Diff(live, desired, ignore)
			if err != nil {
				return nil, fmt.Errorf("comparing %s: %w", subject, err)
			}
			d.Action = "unchanged"
			for _, f := range fields {
				d.Fields = append(d.Fields, f.Path)
			}
			if len(fields) > 0 {
				d.Action = "configured"
				if d.Diff, err = unifiedDiff(live, desired, ignore); err != nil {
					return nil, fmt.Errorf("comparing %s: %w", subject, err)
				}
			}
			shown := forDisplay(live, ignore)
			maskSecret(shown, nil)
			if d.Live, err = toYAML(shown); err != nil {
				return nil, err
			}
		}
		maskSecret(git, live)
		if d.Git, err = toYAML(git); err != nil {
			return nil, err
		}
		d.Git, d.Live, d.Diff = maskValues(d.Git, r.sensitive), maskValues(d.Live, r.sensitive), maskValues(d.Diff, r.sensitive)
		out = append(out, d)
	}
	return out, nil
}

func toYAML(obj *unstructured.Unstructured) (string, error) {
	b, err := yaml.Marshal(obj.Object)
	if err != nil {
		return "", fmt.Errorf("encoding %s: %w", apply.Subject(obj), err)
	}
	return string(b), nil
}
