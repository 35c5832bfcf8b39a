package ui

import (
	"context"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// AutomatedImage is an image of the application's live objects that an ImagePolicy of its
// namespace chooses versions of (image automation).
type AutomatedImage struct {
	// Image is as the live objects have it; Objects are the ids of those that do.
	Image   string   `json:"image"`
	Objects []string `json:"objects"`
	// Policy is the ImagePolicy's name; Repository its ImageRepository's namespace/name.
	Policy     string `json:"policy"`
	Repository string `json:"repository"`
	// Latest is the policy's status.latestRef (empty until it has chosen one), and
	// AtLatest whether Image is it.
	Latest   string `json:"latest,omitempty"`
	AtLatest bool   `json:"atLatest,omitempty"`
}

// Bounds on what automatedImages reads per request.
const (
	maxImageObjects  = 100
	maxImagePolicies = 100
	maxImageDepth    = 12
)

// automatedImages matches the images of app's live objects (the containers,
// initContainers and ephemeralContainers anywhere in the inventory's objects, read as
// the caller may) against the ImagePolicies of app's namespace. The rule: an image is
// automated by a policy when its repository (the reference without tag or digest,
// normalized as a registry does: "nginx" is index.docker.io/library/nginx) is the
// repository of the policy's ImageRepository (spec.image) or of its status.latestRef.
// None when the caller may not list ImagePolicies there.
func (s *Server) automatedImages(ctx context.Context, app *gitsyncv1.Application, nodes []*Node) []AutomatedImage {
	who := callerReader{s: s, who: callerOf(ctx)}
	policies := &gitsyncv1.ImagePolicyList{}
	if err := who.List(ctx, policies, client.InNamespace(app.Namespace)); err != nil || len(policies.Items) == 0 {
		return nil
	}
	byRepo := map[string][]imageTarget{}
	for i := range policies.Items {
		if i == maxImagePolicies {
			break
		}
		p := &policies.Items[i]
		ns := p.Spec.ImageRepositoryRef.Namespace
		if ns == "" {
			ns = p.Namespace
		}
		t := imageTarget{policy: p, repo: ns + "/" + p.Spec.ImageRepositoryRef.Name}
		repo := &gitsyncv1.ImageRepository{}
		if err := who.Get(ctx, client.ObjectKey{Namespace: ns, Name: p.Spec.ImageRepositoryRef.Name}, repo); err == nil {
			if r, ok := repository(repo.Spec.Image); ok {
				byRepo[r] = append(byRepo[r], t)
			}
		}
		if l := p.Status.LatestRef; l != nil {
			if r, ok := repository(l.Name); ok && !hasPolicy(byRepo[r], p) {
				byRepo[r] = append(byRepo[r], t)
			}
		}
	}
	if len(byRepo) == 0 {
		return nil
	}
	reader, err := s.objectReader(ctx, app)
	if err != nil {
		return nil
	}
	found := map[string]*AutomatedImage{}
	read := 0
	for _, n := range nodes {
		if !n.Managed || n.Kind == "Secret" || read == maxImageObjects {
			continue
		}
		gvk, ok := s.objectKind(app, n.ID)
		if !ok {
			continue
		}
		read++
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(gvk)
		if err := reader.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: n.Name}, obj); err != nil {
			continue
		}
		for _, img := range imagesIn(obj.Object, 0) {
			r, ok := repository(img)
			if !ok {
				continue
			}
			for _, t := range byRepo[r] {
				key := img + "\x00" + t.policy.Name
				a := found[key]
				if a == nil {
					a = &AutomatedImage{Image: img, Policy: t.policy.Name, Repository: t.repo}
					if l := t.policy.Status.LatestRef; l != nil {
						a.Latest = l.String()
						a.AtLatest = sameImage(img, a.Latest)
					}
					found[key] = a
				}
				if len(a.Objects) == 0 || a.Objects[len(a.Objects)-1] != n.ID {
					a.Objects = append(a.Objects, n.ID)
				}
			}
		}
	}
	out := make([]AutomatedImage, 0, len(found))
	for _, a := range found {
		out = append(out, *a)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Image != out[j].Image {
			return out[i].Image < out[j].Image
		}
		return out[i].Policy < out[j].Policy
	})
	return out
}

// imageTarget is an ImagePolicy and its ImageRepository's namespace/name.
type imageTarget struct {
	policy *gitsyncv1.ImagePolicy
	repo   string
}

func hasPolicy(ts []imageTarget, p *gitsyncv1.ImagePolicy) bool {
	for _, t := range ts {
		if t.policy == p {
			return true
		}
	}
	return false
}

// repository is image's repository, normalized (registry and path, no tag or digest).
func repository(image string) (string, bool) {
	ref, err := name.ParseReference(image, name.WeakValidation)
	if err != nil {
		return "", false
	}
	return ref.Context().Name(), true
}

// sameImage says whether a and b name the same repository and tag (and digest, when both
// have one).
func sameImage(a, b string) bool {
	ra, errA := name.ParseReference(a, name.WeakValidation)
	rb, errB := name.ParseReference(b, name.WeakValidation)
	if errA != nil || errB != nil {
		return false
	}
	return ra.Name() == rb.Name() || (ra.Context().Name() == rb.Context().Name() && ra.Identifier() == rb.Identifier())
}

// imagesIn collects the image of every container of the (containers, initContainers,
// ephemeralContainers) lists anywhere in v, down to maxImageDepth.
func imagesIn(v any, depth int) []string {
	if depth > maxImageDepth {
		return nil
	}
	var out []string
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if list, ok := child.([]any); ok && (k == "containers" || k == "initContainers" || k == "ephemeralContainers") {
				for _, c := range list {
					if m, ok := c.(map[string]any); ok {
						if img, ok := m["image"].(string); ok && img != "" {
							out = append(out, img)
						}
					}
				}
				continue
			}
			out = append(out, imagesIn(child, depth+1)...)
		}
	case []any:
		for _, child := range t {
			out = append(out, imagesIn(child, depth+1)...)
		}
	}
	return out
}
