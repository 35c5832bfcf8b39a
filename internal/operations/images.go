package operations

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// ImageRow is one line of `gitsync get images`: an ImageRepository, an ImagePolicy or an
// ImageUpdateAutomation.
type ImageRow struct {
	Namespace, Name string
	// Kind is ImageRepository, ImagePolicy or ImageUpdateAutomation.
	Kind string
	// Image is the repository's image, the policy's repository, the automation's source.
	Image string
	// Latest is the tag count (repository), the chosen image (policy), the last pushed
	// commit (automation).
	Latest string
	// Ready and Message are the Ready condition's status and message.
	Ready, Message string
}

// Images lists the image automation objects of namespace ns ("" : all namespaces):
// repositories, then policies, then automations, each by namespace and name.
func Images(ctx context.Context, c client.Reader, ns string) ([]ImageRow, error) {
	var opts []client.ListOption
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	var rows []ImageRow
	repos := &gitsyncv1.ImageRepositoryList{}
	if err := c.List(ctx, repos, opts...); err != nil {
		return nil, fmt.Errorf("listing image repositories: %w", err)
	}
	for i := range repos.Items {
		r := &repos.Items[i]
		latest := "-"
		if s := r.Status.LastScanResult; s != nil {
			latest = fmt.Sprintf("%d tags", s.TagCount)
		}
		rows = append(rows, imageRow(r, gitsyncv1.ImageRepositoryKind, r.Spec.Image, latest, r.Status.Conditions))
	}
	policies := &gitsyncv1.ImagePolicyList{}
	if err := c.List(ctx, policies, opts...); err != nil {
		return nil, fmt.Errorf("listing image policies: %w", err)
	}
	for i := range policies.Items {
		p := &policies.Items[i]
		latest := "-"
		if p.Status.LatestRef != nil {
			latest = p.Status.LatestRef.String()
		}
		rows = append(rows, imageRow(p, gitsyncv1.ImagePolicyKind, "imagerepo/"+p.Spec.ImageRepositoryRef.Name, latest, p.Status.Conditions))
	}
	autos := &gitsyncv1.ImageUpdateAutomationList{}
	if err := c.List(ctx, autos, opts...); err != nil {
		return nil, fmt.Errorf("listing image update automations: %w", err)
	}
	for i := range autos.Items {
		a := &autos.Items[i]
		latest := "-"
		if a.Status.LastPushCommit != "" {
			latest = a.Status.LastPushCommit
		}
		rows = append(rows, imageRow(a, gitsyncv1.ImageUpdateAutomationKind, "gitrepo/"+a.Spec.SourceRef.Name, latest, a.Status.Conditions))
	}
	order := map[string]int{gitsyncv1.ImageRepositoryKind: 0, gitsyncv1.ImagePolicyKind: 1, gitsyncv1.ImageUpdateAutomationKind: 2}
	sort.SliceStable(rows, func(i, j int) bool {
		if order[rows[i].Kind] != order[rows[j].Kind] {
			return order[rows[i].Kind] < order[rows[j].Kind]
		}
		if rows[i].Namespace != rows[j].Namespace {
			return rows[i].Namespace < rows[j].Namespace
		}
		return rows[i].Name < rows[j].Name
	})
	return rows, nil
}

func imageRow(obj client.Object, kind, image, latest string, conds []metav1.Condition) ImageRow {
	row := ImageRow{Namespace: obj.GetNamespace(), Name: obj.GetName(), Kind: kind, Image: image, Latest: latest, Ready: "Unknown"}
	if c := apimeta.FindStatusCondition(conds, gitsyncv1.ReadyCondition); c != nil {
		row.Ready, row.Message = string(c.Status), c.Message
	}
	return row
}

// ImageKind is a kind `gitsync reconcile image` takes.
type ImageKind string

// The image kinds and the words people type for them.
const (
	ImageRepositoryKind ImageKind = "repository"
	ImagePolicyKind     ImageKind = "policy"
	ImageUpdateKind     ImageKind = "update"
)

// ParseImageKind reads repository|policy|update (and the kinds' names and short names).
func ParseImageKind(s string) (ImageKind, error) {
	switch strings.ToLower(s) {
	case "repository", "repositories", "repo", "imagerepo", "imagerepository":
		return ImageRepositoryKind, nil
	case "policy", "policies", "imagepolicy":
		return ImagePolicyKind, nil
	case "update", "updates", "imageupdate", "automation", "imageupdateautomation":
		return ImageUpdateKind, nil
	}
	return "", fmt.Errorf("unknown image kind %q: use repository, policy or update", s)
}

func (k ImageKind) newObject() (client.Object, string) {
	switch k {
	case ImagePolicyKind:
		return &gitsyncv1.ImagePolicy{}, gitsyncv1.ImagePolicyKind
	case ImageUpdateKind:
		return &gitsyncv1.ImageUpdateAutomation{}, gitsyncv1.ImageUpdateAutomationKind
	}
	return &gitsyncv1.ImageRepository{}, gitsyncv1.ImageRepositoryKind
}

// ReconcileImage requests a reconcile of the image object at key (requested-at) and
// waits until its controller has handled it; it returns the Ready condition's message,
// or an error with it when Ready is False.
func ReconcileImage(ctx context.Context, c client.Client, k ImageKind, key client.ObjectKey) (string, error) {
	obj, name := k.newObject()
	if err := c.Get(ctx, key, obj); err != nil {
		return "", fmt.Errorf("reading %s %s: %w", name, key, err)
	}
	base := obj.DeepCopyObject().(client.Object)
	requested := gitsyncv1.RequestReconcile(obj, time.Now())
	if err := c.Patch(ctx, obj, client.MergeFrom(base)); err != nil {
		return "", fmt.Errorf("requesting a reconcile of %s %s: %w", name, key, err)
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := c.Get(ctx, key, obj); err != nil {
			return "", fmt.Errorf("reading %s %s: %w", name, key, err)
		}
		handled, conds := imageStatus(obj)
		if handled == requested {
			c := apimeta.FindStatusCondition(conds, gitsyncv1.ReadyCondition)
			switch {
			case c == nil:
				return "", fmt.Errorf("%s %s has no Ready condition", name, key)
			case c.Status == "False":
				return "", errors.New(c.Reason + ": " + c.Message)
			}
			return c.Message, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for %s %s: %w", name, key, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

func imageStatus(obj client.Object) (string, []metav1.Condition) {
	switch o := obj.(type) {
	case *gitsyncv1.ImageRepository:
		return o.Status.LastHandledReconcileAt, o.Status.Conditions
	case *gitsyncv1.ImagePolicy:
		return o.Status.LastHandledReconcileAt, o.Status.Conditions
	case *gitsyncv1.ImageUpdateAutomation:
		return o.Status.LastHandledReconcileAt, o.Status.Conditions
	}
	return "", nil
}
