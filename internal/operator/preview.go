package operator

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gitsync-dev/gitsync/internal/controller/sources"
	"github.com/gitsync-dev/gitsync/internal/preview"
	"github.com/gitsync-dev/gitsync/internal/webhook"
)

// newPreviews makes the pull-request preview runner (added to the manager) and the
// webhook Previewer that hands it the receiver's pull request events.
func newPreviews(mgr manager.Manager, r *preview.Runner) (webhook.Previewer, error) {
	r.Client, r.Secrets = mgr.GetClient(), mgr.GetAPIReader()
	r.Log = mgr.GetLogger().WithName("preview")
	if err := mgr.Add(r); err != nil {
		return nil, err
	}
	return previewer{r}, nil
}

// previewer turns a webhook.PullRequest into a preview.Request.
type previewer struct{ r *preview.Runner }

func (p previewer) Preview(_ context.Context, pr webhook.PullRequest) {
	p.r.Preview(preview.Request{Namespace: pr.Namespace, Name: pr.Name, Number: pr.Number, HeadBranch: pr.HeadBranch,
		HeadSHA: pr.HeadSHA, BaseBranch: pr.BaseBranch, Fork: pr.Fork, Closed: pr.Action == webhook.PullClosed})
}

// previewSecrets is the tenant-mode check of the Secrets a preview reads; nil (no
// check) when tenant mode is off.
func previewSecrets(a *sources.SecretAccess) preview.SecretChecker {
	if a == nil {
		return nil
	}
	return a
}
