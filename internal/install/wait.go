package install

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// keysOf lists the keys of the objects of kind in objs.
func keysOf(objs []*unstructured.Unstructured, kind string) []client.ObjectKey {
	var keys []client.ObjectKey
	for _, obj := range objs {
		if obj.GetKind() == kind {
			keys = append(keys, client.ObjectKeyFromObject(obj))
		}
	}
	return keys
}

// WaitForCRDs waits until every CustomResourceDefinition of objs is established and
// returns how many there are.
func WaitForCRDs(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) (int, error) {
	crds := keysOf(objs, "CustomResourceDefinition")
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
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
	return len(crds), err
}

// WaitForManager waits until every Deployment of objs is available at its generation.
func WaitForManager(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	deployments := keysOf(objs, "Deployment")
	return wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
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
}
