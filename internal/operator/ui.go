package operator

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gitsync-dev/gitsync/internal/ui"
)

// addUI serves the web UI read-only on opts.UIBindAddress (every replica), when set.
// Every request needs a bearer token that the API server accepts (TokenReview) and is
// answered with its caller's rights (SubjectAccessReviews) over the operator's cache.
// Its diffs compare what the operator last applied (diff) with the cluster.
func addUI(mgr manager.Manager, cfg *rest.Config, scheme *runtime.Scheme, opts Options, diff ui.Differ) error {
	if opts.UIBindAddress == "" || opts.UIBindAddress == "0" {
		return nil
	}
	return mgr.Add(&uiServer{cfg: cfg, scheme: scheme, addr: opts.UIBindAddress, diff: diff})
}

type uiServer struct {
	cfg    *rest.Config
	scheme *runtime.Scheme
	addr   string
	diff   ui.Differ
}

func (s *uiServer) NeedLeaderElection() bool { return false }

func (s *uiServer) Start(ctx context.Context) error {
	srv, err := ui.New(ctx, s.cfg, s.scheme, ui.Options{ReadOnly: true, Diff: s.diff, Auth: ui.AuthKubernetes})
	if err != nil {
		return err
	}
	return srv.Run(ctx, s.addr, func(url string) {
		ctrl.LoggerFrom(ctx).WithName("ui").Info("serving the web UI (read-only, bearer token required)", "url", url)
	})
}
