package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/operations"
)

// listArgs select the objects of a list tool.
type listArgs struct {
	Namespace     string `json:"namespace,omitempty" jsonschema:"namespace to list (default: the kubeconfig's namespace)"`
	AllNamespaces bool   `json:"allNamespaces,omitempty" jsonschema:"list across all namespaces"`
}

// appArgs name one Application.
type appArgs struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"namespace of the Application (default: the kubeconfig's namespace)"`
	Name      string `json:"name" jsonschema:"name of the Application"`
}

type sourceArgs struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"namespace of the source (default: the kubeconfig's namespace)"`
	Name      string `json:"name" jsonschema:"name of the source"`
	Kind      string `json:"kind,omitempty" jsonschema:"GitRepository or HelmRepository (default: whichever exists, GitRepository first)"`
}

type treeArgs struct {
	appArgs
	Children bool `json:"children,omitempty" jsonschema:"also show owned children (Deployment → ReplicaSet → Pod)"`
}

type diffArgs struct {
	appArgs
	Revision string `json:"revision,omitempty" jsonschema:"render this instead of the current revision: a branch name of the Application's GitRepository, <branch>@sha1:<40 hex> for a commit of that branch, or 40 hex digits for a commit of the branch the GitRepository follows"`
}

// Status is the summary of one Application or source, as `gitsync get` shows it.
type Status = operations.Status

func (s *Server) addReadTools() {
	addTool(s, &sdk.Tool{Name: "list_applications", Annotations: readOnly(),
		Description: "List gitsync Applications with their status: ready (and reason, message), sync, health, applied revision, suspended, pinned revision, drifted object count."},
		func(ctx context.Context, a listArgs) (any, error) {
			list := &gitsyncv1.ApplicationList{}
			if err := s.opts.Client.List(ctx, list, s.listOpts(a)...); err != nil {
				return nil, fmt.Errorf("listing Applications: %w", err)
			}
			out := []Status{}
			for i := range list.Items {
				out = append(out, operations.StatusOf(&list.Items[i]))
			}
			return out, nil
		})
	addTool(s, &sdk.Tool{Name: "list_sources", Annotations: readOnly(),
		Description: "List the sources (GitRepository and HelmRepository) with their status: ready (and reason, message), artifact revision, suspended."},
		func(ctx context.Context, a listArgs) (any, error) {
			out := []Status{}
			git := &gitsyncv1.GitRepositoryList{}
			if err := s.opts.Client.List(ctx, git, s.listOpts(a)...); err != nil {
				return nil, fmt.Errorf("listing GitRepositories: %w", err)
			}
			for i := range git.Items {
				out = append(out, operations.StatusOf(&git.Items[i]))
			}
			helm := &gitsyncv1.HelmRepositoryList{}
			if err := s.opts.Client.List(ctx, helm, s.listOpts(a)...); err != nil {
				return nil, fmt.Errorf("listing HelmRepositories: %w", err)
			}
			for i := range helm.Items {
				out = append(out, operations.StatusOf(&helm.Items[i]))
			}
			return out, nil
		})
	addTool(s, &sdk.Tool{Name: "get_application", Annotations: readOnly(),
		Description: "Get one Application: metadata, spec and status (managedFields left out)."},
		func(ctx context.Context, a appArgs) (any, error) {
			app, err := s.app(ctx, a)
			if err != nil {
				return nil, err
			}
			return forDisplay(app), nil
		})
	addTool(s, &sdk.Tool{Name: "get_source", Annotations: readOnly(),
		Description: "Get one source (GitRepository or HelmRepository): metadata, spec and status (managedFields left out; Secrets are only named, never read)."},
		func(ctx context.Context, a sourceArgs) (any, error) {
			obj, err := s.source(ctx, a.Kind, client.ObjectKey{Namespace: s.ns(a.Namespace), Name: a.Name})
			if err != nil {
				return nil, err
			}
			return forDisplay(obj), nil
		})
	addTool(s, &sdk.Tool{Name: "application_tree", Annotations: readOnly(),
		Description: "The objects an Application applied (its inventory) with each one's health, and the hooks of its last run with their phase and result."},
		func(ctx context.Context, a treeArgs) (any, error) {
			app, err := s.app(ctx, a.appArgs)
			if err != nil {
				return nil, err
			}
			nodes, err := s.opts.Tree(ctx, app.Namespace, app.Name, a.Children)
			if err != nil {
				return nil, err
			}
			health := gitsyncv1.HealthStatusUnknown
			if app.Status.Health != nil {
				health = app.Status.Health.Status
			}
			return map[string]any{"application": app.Namespace + "/" + app.Name, "health": health,
				"objects": nodes, "hooks": app.Status.Hooks}, nil
		})
	addTool(s, &sdk.Tool{Name: "diff_application", Annotations: readOnly(),
		Description: "What the next sync of an Application would change: renders it (from its source's current or pinned revision, or from the given revision) and compares each object with the cluster by a server-side dry-run, field by field. Secret values are masked."},
		func(ctx context.Context, a diffArgs) (any, error) {
			res, err := s.opts.Diff(ctx, s.ns(a.Namespace), a.Name, strings.TrimSpace(a.Revision))
			if err != nil {
				return nil, err
			}
			return res.Report, nil
		})
	addTool(s, &sdk.Tool{Name: "application_history", Annotations: readOnly(),
		Description: "An Application's last syncs (status.history), newest first: revision, result, start and finish, counts of created/configured/unchanged/pruned objects, message."},
		func(ctx context.Context, a appArgs) (any, error) {
			app, err := s.app(ctx, a)
			if err != nil {
				return nil, err
			}
			return operations.History(app), nil
		})
	addTool(s, &sdk.Tool{Name: "application_events", Annotations: readOnly(),
		Description: "Kubernetes events of an Application and of the objects it applied, oldest first."},
		func(ctx context.Context, a appArgs) (any, error) {
			app, err := s.app(ctx, a)
			if err != nil {
				return nil, err
			}
			events, err := s.opts.Events(ctx, app.Namespace, app.Name)
			if err != nil {
				return nil, err
			}
			if events == nil {
				events = []Event{}
			}
			return events, nil
		})
	addTool(s, &sdk.Tool{Name: "explain_application", Annotations: readOnly(),
		Description: "Why an Application is not Ready, Synced or Healthy: suspended or pinned, autoSync off, failing conditions, what a sync in progress waits for, failed or running hooks, dependencies that are not Ready, each source's readiness, and drifted objects with the field managers that wrote them."},
		func(ctx context.Context, a appArgs) (any, error) {
			app, err := s.app(ctx, a)
			if err != nil {
				return nil, err
			}
			return operations.ExplainApp(ctx, s.opts.Client, app), nil
		})
}

func (s *Server) listOpts(a listArgs) []client.ListOption {
	if a.AllNamespaces {
		return nil
	}
	return []client.ListOption{client.InNamespace(s.ns(a.Namespace))}
}

// app reads the Application of a.
func (s *Server) app(ctx context.Context, a appArgs) (*gitsyncv1.Application, error) {
	if a.Name == "" {
		return nil, errors.New("name is required")
	}
	app := &gitsyncv1.Application{}
	key := client.ObjectKey{Namespace: s.ns(a.Namespace), Name: a.Name}
	if err := s.opts.Client.Get(ctx, key, app); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("Application %q not found in namespace %s", key.Name, key.Namespace)
		}
		return nil, fmt.Errorf("reading Application %s: %w", key, err)
	}
	return app, nil
}

// source reads the GitRepository or HelmRepository key (kind "": whichever exists).
func (s *Server) source(ctx context.Context, kind string, key client.ObjectKey) (client.Object, error) {
	if key.Name == "" {
		return nil, errors.New("name is required")
	}
	var candidates []client.Object
	switch strings.ToLower(kind) {
	case "", "source":
		candidates = []client.Object{&gitsyncv1.GitRepository{}, &gitsyncv1.HelmRepository{}}
	case "gitrepository", "gitrepo":
		candidates = []client.Object{&gitsyncv1.GitRepository{}}
	case "helmrepository", "helmrepo":
		candidates = []client.Object{&gitsyncv1.HelmRepository{}}
	default:
		return nil, fmt.Errorf("kind %q: use GitRepository or HelmRepository", kind)
	}
	var err error
	for _, obj := range candidates {
		if err = s.opts.Client.Get(ctx, key, obj); err == nil {
			return obj, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading source %s: %w", key, err)
		}
	}
	return nil, fmt.Errorf("no source %q in namespace %s", key.Name, key.Namespace)
}

// forDisplay is obj with its kind set and managedFields left out.
func forDisplay(obj client.Object) client.Object {
	obj = obj.DeepCopyObject().(client.Object)
	obj.SetManagedFields(nil)
	kind := gitsyncv1.ApplicationKind
	switch obj.(type) {
	case *gitsyncv1.GitRepository:
		kind = gitsyncv1.GitRepositoryKind
	case *gitsyncv1.HelmRepository:
		kind = gitsyncv1.HelmRepositoryKind
	}
	obj.GetObjectKind().SetGroupVersionKind(gitsyncv1.GroupVersion.WithKind(kind))
	return obj
}
