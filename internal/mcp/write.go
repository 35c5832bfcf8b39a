package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// objectArgs name one object that a write tool acts on.
type objectArgs struct {
	Kind      string `json:"kind,omitempty" jsonschema:"app (Application, the default), source (GitRepository) or helmrepo (HelmRepository)"`
	Namespace string `json:"namespace,omitempty" jsonschema:"namespace of the object (default: the kubeconfig's namespace)"`
	Name      string `json:"name" jsonschema:"name of the object"`
}

type reconcileArgs struct {
	objectArgs
	WithSource bool `json:"withSource,omitempty" jsonschema:"for an Application: reconcile its source first, so that a new commit or chart version is fetched"`
}

type rollbackArgs struct {
	appArgs
	To string `json:"to" jsonschema:"revision from application_history (<ref>@sha1:<commit>, or a unique commit prefix of at least 7 hex digits)"`
}

// kindOf checks a write tool's kind argument ("" is an Application).
func kindOf(k string) (string, error) {
	switch strings.ToLower(k) {
	case "", "app", "application", "gsapp":
		return "app", nil
	case "source", "gitrepository", "gitrepo":
		return "source", nil
	case "helmrepo", "helmrepository":
		return "helmrepo", nil
	}
	return "", fmt.Errorf("kind %q: use app, source or helmrepo", k)
}

func (s *Server) addWriteTools() {
	addTool(s, &sdk.Tool{Name: "reconcile", Annotations: write(false),
		Description: "Reconcile an Application or source now (sets gitsync.dev/requested-at with your identity), wait until it is handled and return the outcome. Refused for a suspended object."},
		func(ctx context.Context, a reconcileArgs) (any, error) {
			k, err := s.checkObject(a.objectArgs)
			if err != nil {
				return nil, err
			}
			return s.opts.Reconcile(ctx, k, s.ns(a.Namespace), a.Name, a.WithSource)
		})
	for _, suspend := range []bool{true, false} {
		name, desc := "resume", "Resume a suspended Application or source (and clear an Application's rollback pin); it reconciles at once."
		if suspend {
			name, desc = "suspend", "Suspend an Application or source: nothing is fetched, synced or corrected until resume."
		}
		addTool(s, &sdk.Tool{Name: name, Annotations: write(true), Description: desc},
			func(ctx context.Context, a objectArgs) (any, error) {
				k, err := s.checkObject(a)
				if err != nil {
					return nil, err
				}
				return s.opts.Suspend(ctx, k, s.ns(a.Namespace), a.Name, suspend)
			})
	}
	addTool(s, &sdk.Tool{Name: "rollback_application", Annotations: write(true),
		Description: "Pin an Application to a revision of its history and apply it; newer commits wait until resume."},
		func(ctx context.Context, a rollbackArgs) (any, error) {
			if a.Name == "" || strings.TrimSpace(a.To) == "" {
				return nil, errors.New("name and to are required")
			}
			return s.opts.Rollback(ctx, s.ns(a.Namespace), a.Name, a.To)
		})
}

func (s *Server) checkObject(a objectArgs) (string, error) {
	if a.Name == "" {
		return "", errors.New("name is required")
	}
	return kindOf(a.Kind)
}
