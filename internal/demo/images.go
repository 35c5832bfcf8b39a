package demo

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// imageRepo is the demo's image in its local registry.
const imageRepo = "demo/web"

// imageRegistry is the demo's container registry (go-containerregistry's, in process, on
// loopback) with demo/web:1.0.0.
type imageRegistry struct{ host string }

func startImageRegistry(ctx context.Context) (*imageRegistry, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() { <-ctx.Done(); _ = srv.Close() }()
	r := &imageRegistry{host: ln.Addr().String()}
	return r, r.push("1.0.0")
}

// image is the demo image's name, without a tag.
func (r *imageRegistry) image() string { return r.host + "/" + imageRepo }

// push tags a new random image as demo/web:tag.
func (r *imageRegistry) push(tag string) error {
	img, err := random.Image(512, 1)
	if err != nil {
		return err
	}
	ref, err := name.NewTag(r.image()+":"+tag, name.Insecure)
	if err != nil {
		return err
	}
	if err := remote.Write(ref, img); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	return nil
}

// imageFiles is the automated workload in the demo repository, marked as Flux marks it.
func (r *imageRegistry) imageFiles() map[string]string {
	return map[string]string{"apps/auto/deployment.yaml": fmt.Sprintf(`# image automation keeps this image at the newest 1.x tag of the local registry
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-auto
spec:
  selector:
    matchLabels: {app: web-auto}
  template:
    metadata:
      labels: {app: web-auto}
    spec:
      containers:
        - name: web
          image: %s:1.0.0 # {"$imagepolicy": "%s:web"}
`, r.image(), Namespace)}
}

// createImageObjects creates the Application of apps/auto and the image automation:
// ImageRepository web, ImagePolicy web (semver 1.x), ImageUpdateAutomation demo.
func (r *imageRegistry) createImageObjects(ctx context.Context, c client.Client) error {
	minute := &metav1.Duration{Duration: time.Minute}
	for _, o := range []client.Object{
		&gitsyncv1.Application{ObjectMeta: metav1.ObjectMeta{Name: "auto", Namespace: Namespace}, Spec: gitsyncv1.ApplicationSpec{
			SourceRef: gitsyncv1.SourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "demo"}, Path: "apps/auto", Prune: true}},
		&gitsyncv1.ImageRepository{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: Namespace}, Spec: gitsyncv1.ImageRepositorySpec{
			Image: r.image(), Insecure: true, Interval: minute}},
		&gitsyncv1.ImagePolicy{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: Namespace}, Spec: gitsyncv1.ImagePolicySpec{
			ImageRepositoryRef: gitsyncv1.NamespacedObjectReference{Name: "web"},
			Policy:             gitsyncv1.ImagePolicyChoice{SemVer: &gitsyncv1.SemVerPolicy{Range: "^1.0.0"}}}},
		&gitsyncv1.ImageUpdateAutomation{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: Namespace}, Spec: gitsyncv1.ImageUpdateAutomationSpec{
			SourceRef: gitsyncv1.ImageUpdateSourceReference{Kind: gitsyncv1.GitRepositoryKind, Name: "demo"}, Interval: minute,
			GitSpec: gitsyncv1.ImageUpdateGitSpec{Commit: gitsyncv1.CommitSpec{
				Author: gitsyncv1.CommitUser{Name: "gitsync image automation", Email: "images@gitsync.invalid"}}},
			Update: &gitsyncv1.UpdateStrategy{Path: "apps/auto"}}},
	} {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}
	return nil
}

// showTagToRollout pushes demo/web:1.1.0, asks for a scan now (as `gitsync reconcile
// image repository web` does) and waits for the commit image automation pushes and for
// the Deployment that the Application applies from it.
func (r *imageRegistry) showTagToRollout(ctx context.Context, c client.Client, say func(string, ...any)) error {
	const tag = "1.1.0"
	if err := r.push(tag); err != nil {
		return err
	}
	repo := &gitsyncv1.ImageRepository{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: "web"}, repo); err != nil {
		return err
	}
	base := repo.DeepCopy()
	gitsyncv1.RequestReconcile(repo, time.Now())
	if err := c.Patch(ctx, repo, client.MergeFrom(base)); err != nil {
		return err
	}
	auto := &gitsyncv1.ImageUpdateAutomation{}
	deploy := &appsv1.Deployment{}
	want := r.image() + ":" + tag
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: "demo"}, auto) != nil || auto.Status.LastPushCommit == "" {
			return false, nil
		}
		if c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: "web-auto"}, deploy) != nil {
			return false, nil
		}
		return deploy.Spec.Template.Spec.Containers[0].Image == want, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for image automation to roll out %s: %w", want, err)
	}
	say("image automation: tag %s pushed to the local registry %s became commit %s in Git, and Deployment %s/web-auto now runs %s",
		tag, r.host, auto.Status.LastPushCommit[:12], Namespace, want)
	return nil
}
