package operations

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/appset"
	"github.com/gitsync-dev/gitsync/internal/source"
	"github.com/gitsync-dev/gitsync/internal/sourceid"
)

// GenerateAppSet runs the ApplicationSet's generators and template as the operator would,
// with the caller's rights: its GitRepositories are fetched at their current artifact
// into a temporary directory, its Clusters listed. The pullRequest generator is not
// available here.
func GenerateAppSet(ctx context.Context, c client.Client, key client.ObjectKey) (*gitsyncv1.ApplicationSet, []*gitsyncv1.Application, error) {
	set := &gitsyncv1.ApplicationSet{}
	if err := c.Get(ctx, key, set); err != nil {
		return nil, nil, fmt.Errorf("reading ApplicationSet %s: %w", key, err)
	}
	tmp, err := os.MkdirTemp("", "gitsync-appset-")
	if err != nil {
		return nil, nil, fmt.Errorf("creating a temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	fetched := map[string]string{}
	in := appset.Inputs{Checkout: func(name string) (string, error) {
		if dir, ok := fetched[name]; ok {
			return dir, nil
		}
		dir, err := fetchArtifact(ctx, c, client.ObjectKey{Namespace: set.Namespace, Name: name}, tmp)
		if err != nil {
			return "", err
		}
		fetched[name] = dir
		return dir, nil
	}}
	clusters := &gitsyncv1.ClusterList{}
	if err := c.List(ctx, clusters, client.InNamespace(set.Namespace)); err != nil {
		return nil, nil, fmt.Errorf("listing Clusters: %w", err)
	}
	in.Clusters = clusters.Items
	sets, err := appset.Generate(ctx, set.Spec.Generators, in)
	if err != nil {
		return nil, nil, err
	}
	apps, err := appset.Applications(set, sets)
	if err != nil {
		return nil, nil, err
	}
	return set, apps, nil
}

// fetchArtifact fetches the GitRepository key at its artifact's commit below dir.
func fetchArtifact(ctx context.Context, c client.Client, key client.ObjectKey, dir string) (string, error) {
	repo := &gitsyncv1.GitRepository{}
	if err := c.Get(ctx, key, repo); err != nil {
		return "", fmt.Errorf("reading GitRepository %s: %w", key.Name, err)
	}
	if repo.Status.Artifact == nil {
		return "", fmt.Errorf("GitRepository %s has no artifact yet", key.Name)
	}
	ref := source.Ref{Commit: source.CommitOf(repo.Status.Artifact.Revision)}
	if repo.Spec.Ref != nil {
		ref.Branch = repo.Spec.Ref.Branch
	}
	request, err := sourceid.GitRequest(ctx, c, repo, ref)
	if err != nil {
		return "", fmt.Errorf("reading the credentials of %s: %w", key.Name, err)
	}
	fetcher, err := source.NewFetcher(dir)
	if err != nil {
		return "", err
	}
	artifact, err := fetcher.Fetch(ctx, request)
	if err != nil {
		return "", fmt.Errorf("fetching %s of GitRepository %s: %w", repo.Status.Artifact.Revision, key.Name, err)
	}
	return artifact.Dir, nil
}

// AppSetChange is one Application a sync of the set would create, change or remove.
type AppSetChange struct {
	Name string
	// Action is create, update, delete or orphan.
	Action string
	// Fields are the changed fields of an update (metadata.labels, spec.path, …).
	Fields []string
}

// AppSetDiff is what the ApplicationSet's controller would do now.
type AppSetDiff struct {
	Changes   []AppSetChange
	Unchanged int
}

// DiffAppSet compares what the set generates with its Applications in the cluster. The
// fields a rollout or rollback sets (spec.autoSync, spec.pinnedRevision) are left out.
func DiffAppSet(ctx context.Context, c client.Client, key client.ObjectKey) (*AppSetDiff, error) {
	set, apps, err := GenerateAppSet(ctx, c, key)
	if err != nil {
		return nil, err
	}
	list := &gitsyncv1.ApplicationList{}
	if err := c.List(ctx, list, client.InNamespace(set.Namespace), client.MatchingLabels{gitsyncv1.ApplicationSetLabel: set.Name}); err != nil {
		return nil, fmt.Errorf("listing the generated Applications: %w", err)
	}
	live := map[string]*gitsyncv1.Application{}
	for i := range list.Items {
		live[list.Items[i].Name] = &list.Items[i]
	}
	d := &AppSetDiff{}
	want := map[string]bool{}
	for _, a := range apps {
		want[a.Name] = true
		l := live[a.Name]
		if l == nil {
			d.Changes = append(d.Changes, AppSetChange{Name: a.Name, Action: "create"})
			continue
		}
		fields, err := changedFields(ctx, c, a, l)
		if err != nil {
			return nil, err
		}
		if len(fields) == 0 {
			d.Unchanged++
			continue
		}
		d.Changes = append(d.Changes, AppSetChange{Name: a.Name, Action: "update", Fields: fields})
	}
	for name, l := range live {
		if want[name] || !metav1.IsControlledBy(l, set) {
			continue
		}
		action := "delete"
		if set.Spec.PreserveOnDeletion {
			action = "orphan"
		}
		d.Changes = append(d.Changes, AppSetChange{Name: name, Action: action})
	}
	sort.Slice(d.Changes, func(i, j int) bool { return d.Changes[i].Name < d.Changes[j].Name })
	return d, nil
}

// changedFields dry-runs the apply of want (as the set's field manager) and lists the
// top-level spec fields, labels and annotations in which the result differs from live.
func changedFields(ctx context.Context, c client.Client, want, live *gitsyncv1.Application) ([]string, error) {
	dry := want.DeepCopy()
	dry.Spec.AutoSync, dry.Spec.PinnedRevision = live.Spec.AutoSync, live.Spec.PinnedRevision
	dry.ResourceVersion = ""
	if err := c.Patch(ctx, dry, client.Apply, client.FieldOwner(gitsyncv1.ApplicationSetFieldManager),
		client.ForceOwnership, client.DryRunAll); err != nil {
		return nil, fmt.Errorf("dry-run apply of Application %s: %w", want.Name, err)
	}
	var fields []string
	if !reflect.DeepEqual(dry.Labels, live.Labels) {
		fields = append(fields, "metadata.labels")
	}
	if !reflect.DeepEqual(dry.Annotations, live.Annotations) {
		fields = append(fields, "metadata.annotations")
	}
	a, b := topLevel(dry.Spec), topLevel(live.Spec)
	for k := range merged(a, b) {
		if string(a[k]) != string(b[k]) {
			fields = append(fields, "spec."+k)
		}
	}
	sort.Strings(fields)
	return fields, nil
}

func topLevel(spec gitsyncv1.ApplicationSpec) map[string]json.RawMessage {
	raw, _ := json.Marshal(spec)
	out := map[string]json.RawMessage{}
	_ = json.Unmarshal(raw, &out)
	return out
}

func merged(a, b map[string]json.RawMessage) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// ResumeAppSet asks the controller to continue the set's halted rollout.
func ResumeAppSet(ctx context.Context, c client.Client, key client.ObjectKey) (*gitsyncv1.ApplicationSet, error) {
	set := &gitsyncv1.ApplicationSet{}
	if err := c.Get(ctx, key, set); err != nil {
		return nil, fmt.Errorf("reading ApplicationSet %s: %w", key, err)
	}
	base := client.MergeFrom(set.DeepCopy())
	if set.Annotations == nil {
		set.Annotations = map[string]string{}
	}
	set.Annotations[gitsyncv1.ResumeRolloutAnnotation] = time.Now().UTC().Format(time.RFC3339Nano)
	if err := c.Patch(ctx, set, base); err != nil {
		return nil, fmt.Errorf("resuming ApplicationSet %s: %w", key, err)
	}
	return set, nil
}

// RollbackAppSet pins every Application of the set to revision (spec.rollback); "" clears it.
func RollbackAppSet(ctx context.Context, c client.Client, key client.ObjectKey, revision string) (*gitsyncv1.ApplicationSet, error) {
	if revision != "" && source.CommitOf(revision) == "" {
		return nil, fmt.Errorf("revision %q names no commit (want <ref>@sha1:<40 hex>, as status.rollout.revision and `gitsync history app` show)", revision)
	}
	set := &gitsyncv1.ApplicationSet{}
	if err := c.Get(ctx, key, set); err != nil {
		return nil, fmt.Errorf("reading ApplicationSet %s: %w", key, err)
	}
	base := client.MergeFrom(set.DeepCopy())
	set.Spec.Rollback = revision
	if err := c.Patch(ctx, set, base); err != nil {
		return nil, fmt.Errorf("rolling back ApplicationSet %s: %w", key, err)
	}
	return set, nil
}
