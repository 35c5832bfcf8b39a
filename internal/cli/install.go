package cli

import (
	"context"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/fluxcd/pkg/ssa"
	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gitsync-dev/gitsync/config"
)

// Version is the binary's version, set at build time with
// -ldflags "-X github.com/gitsync-dev/gitsync/internal/cli.Version=v0.1.0"; else the
// module version from the build info.
var Version = ""

// installManager is the field manager of `gitsync install`.
const installManager = "gitsync-install"

func clientVersion() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func (o *options) newInstallCommand() *cobra.Command {
	var export, waitReady bool
	var image string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "install [--export]",
		Short: "Install gitsync (the embedded config/default: CRDs, RBAC, the manager in gitsync-system), or print it with --export",
		Example: `  gitsync install
  gitsync install --export > gitsync.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			objs, err := config.Install()
			if err != nil {
				return err
			}
			if image == "" && clientVersion() != "dev" {
				image = "ghcr.io/gitsync-dev/gitsync:" + clientVersion()
			}
			if image != "" {
				setImage(objs, image)
			}
			sort.Sort(ssa.SortableUnstructureds(objs))
			if export {
				for i, obj := range objs {
					data, err := yaml.Marshal(obj.Object)
					if err != nil {
						return fmt.Errorf("encoding %s/%s: %w", obj.GetKind(), obj.GetName(), err)
					}
					if i > 0 {
						fmt.Fprintln(o.Out, "---")
					}
					if _, err := o.Out.Write(data); err != nil {
						return err
					}
				}
				return nil
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			return o.install(ctx, objs, waitReady)
		},
	}
	cmd.Flags().BoolVar(&export, "export", false, "print the manifests instead of applying them")
	cmd.Flags().StringVar(&image, "image", "", "the manager's image; default: the image of this binary's version")
	cmd.Flags().BoolVar(&waitReady, "wait", true, "wait until the manager's Deployment is available (the CRDs are always waited for)")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait")
	return cmd
}

func setImage(objs []*unstructured.Unstructured, image string) {
	for _, obj := range objs {
		if obj.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			if m, ok := c.(map[string]any); ok && m["name"] == "manager" {
				m["image"] = image
			}
		}
		_ = unstructured.SetNestedSlice(obj.Object, containers, "spec", "template", "spec", "containers")
	}
}

// install server-side-applies objs (CRDs and Namespaces first), waits for the CRDs to be
// established and, with waitReady, for the Deployment to be available.
func (o *options) install(ctx context.Context, objs []*unstructured.Unstructured, waitReady bool) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	var crds, deployments []client.ObjectKey
	for _, obj := range objs {
		if err := c.Patch(ctx, obj, client.Apply, client.ForceOwnership, client.FieldOwner(installManager)); err != nil {
			return fmt.Errorf("applying %s/%s: %w", obj.GetKind(), obj.GetName(), err)
		}
		fmt.Fprintf(o.Out, "applied %s/%s\n", obj.GetKind(), obj.GetName())
		switch obj.GetKind() {
		case "CustomResourceDefinition":
			crds = append(crds, client.ObjectKeyFromObject(obj))
		case "Deployment":
			deployments = append(deployments, client.ObjectKeyFromObject(obj))
		}
	}
	err = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, key := range crds {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, key, crd); err != nil {
				return false, err
			}
			established := false
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					established = true
				}
			}
			if !established {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the CRDs to be established: %w", err)
	}
	fmt.Fprintf(o.Out, "✔ %d CRDs established\n", len(crds))
	if !waitReady {
		return nil
	}
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		for _, key := range deployments {
			d := &appsv1.Deployment{}
			if err := c.Get(ctx, key, d); err != nil {
				return false, err
			}
			available := false
			for _, cond := range d.Status.Conditions {
				if cond.Type == appsv1.DeploymentAvailable && cond.Status == "True" {
					available = true
				}
			}
			if !available || d.Status.ObservedGeneration != d.Generation {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the manager Deployment to be available: %w", err)
	}
	fmt.Fprintln(o.Out, "✔ gitsync is running")
	return nil
}

func (o *options) newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the client's version and, when the cluster is reachable, the server's",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(o.Out, "client: %s\n", clientVersion())
			cfg, err := o.restConfig()
			if err == nil {
				cfg.Timeout = 5 * time.Second
				var dc *discovery.DiscoveryClient
				if dc, err = discovery.NewDiscoveryClientForConfig(cfg); err == nil {
					var v fmt.Stringer
					if v, err = dc.ServerVersion(); err == nil {
						fmt.Fprintf(o.Out, "kubernetes: %s\n", v)
						fmt.Fprintf(o.Out, "server: %s\n", o.managerVersion(cmd.Context()))
						return nil
					}
				}
			}
			fmt.Fprintf(o.Out, "server: unreachable (%s)\n", strings.TrimSpace(err.Error()))
			return nil
		},
	}
}

// managerVersion is the image tag of the installed manager, or "not installed".
func (o *options) managerVersion(ctx context.Context) string {
	c, err := o.client()
	if err != nil {
		return "unknown"
	}
	list := &appsv1.DeploymentList{}
	if err := c.List(ctx, list, client.MatchingLabels{"app.kubernetes.io/name": "gitsync"}); err != nil || len(list.Items) == 0 {
		return "not installed"
	}
	for _, ctr := range list.Items[0].Spec.Template.Spec.Containers {
		if ctr.Name == "manager" {
			if i := strings.LastIndex(ctr.Image, ":"); i >= 0 {
				return ctr.Image[i+1:] + " (" + list.Items[0].Namespace + ")"
			}
			return ctr.Image
		}
	}
	return "unknown"
}
