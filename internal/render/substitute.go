package render

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/substitute"
)

// ReadSubstituteFrom reads one spec.postBuild.substituteFrom reference of an
// Application of namespace ns through c (the Application's identity, or a person's):
// nil when it is optional and missing, a *ValuesError when it is required and missing.
// Errors name the object, never its values.
func ReadSubstituteFrom(ctx context.Context, c client.Reader, ns string, ref gitsyncv1.SubstituteReference) (*substitute.Source, error) {
	key := client.ObjectKey{Namespace: ns, Name: ref.Name}
	var src *substitute.Source
	var err error
	switch ref.Kind {
	case "Secret":
		sec := &corev1.Secret{}
		if err = c.Get(ctx, key, sec); err == nil {
			src = &substitute.Source{Data: make(map[string]string, len(sec.Data)), Secret: true}
			for k, v := range sec.Data {
				src.Data[k] = string(v)
			}
		}
	case "ConfigMap":
		cm := &corev1.ConfigMap{}
		if err = c.Get(ctx, key, cm); err == nil {
			src = &substitute.Source{Data: cm.Data}
		}
	default:
		return nil, fmt.Errorf("spec.postBuild.substituteFrom: kind %q is not ConfigMap or Secret", ref.Kind)
	}
	switch {
	case apierrors.IsNotFound(err):
		if ref.Optional {
			return nil, nil
		}
		return nil, &ValuesError{fmt.Errorf("spec.postBuild.substituteFrom %s %s/%s: not found", ref.Kind, ns, ref.Name)}
	case err != nil:
		return nil, fmt.Errorf("reading spec.postBuild.substituteFrom %s %s/%s: %w", ref.Kind, ns, ref.Name, err)
	}
	return src, nil
}

// variables merges spec.postBuild's variables: substituteFrom (read through
// cluster.Variables, in order) under substitute. Without cluster.Variables a
// substituteFrom reference is an error: only inline variables render offline.
func variables(ctx context.Context, pb *gitsyncv1.PostBuild, cluster *Cluster) (*substitute.Variables, error) {
	var sources []substitute.Source
	for _, ref := range pb.SubstituteFrom {
		if cluster.Variables == nil {
			return nil, fmt.Errorf("spec.postBuild.substituteFrom %s %s is read from the cluster: render it with a cluster", ref.Kind, ref.Name)
		}
		src, err := cluster.Variables(ctx, ref)
		if err != nil {
			return nil, err
		}
		if src != nil {
			sources = append(sources, *src)
		}
	}
	return substitute.Merge(pb.Substitute, sources...), nil
}

// substituteStep runs spec.postBuild over objs, in place, and returns the values that
// came from Secrets (for masking).
func substituteStep(ctx context.Context, app *gitsyncv1.Application, objs []*unstructured.Unstructured, cluster *Cluster) ([]string, error) {
	pb := app.Spec.PostBuild
	if pb == nil {
		return nil, nil
	}
	vars, err := variables(ctx, pb, cluster)
	if err != nil {
		return nil, err
	}
	if err := substitute.Objects(objs, vars); err != nil {
		return nil, err
	}
	return vars.SecretValues(), nil
}
