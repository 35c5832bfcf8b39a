package operations

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WaitFor reads the object of kind k at key and then watches it (no polling) until check
// says done or fails, or ctx ends. check sees each new version of the object.
func WaitFor(ctx context.Context, c client.WithWatch, k Kind, key client.ObjectKey,
	check func(obj client.Object) (bool, error)) (client.Object, error) {
	for {
		obj, err := Get(ctx, c, k, key)
		if err != nil {
			return nil, err
		}
		if done, err := check(obj); done || err != nil {
			return obj, err
		}
		w, err := c.Watch(ctx, k.NewList(), client.InNamespace(key.Namespace),
			client.MatchingFields{"metadata.name": key.Name},
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: obj.GetResourceVersion()}})
		if err != nil {
			return nil, fmt.Errorf("watching %s %s: %w", k.Name(), key, err)
		}
		obj, done, err := drain(ctx, w, k, key, check)
		w.Stop()
		if done || err != nil {
			return obj, err
		}
		// The watch ended (server timeout): read again and watch again.
	}
}

func drain(ctx context.Context, w watch.Interface, k Kind, key client.ObjectKey,
	check func(obj client.Object) (bool, error)) (client.Object, bool, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, false, fmt.Errorf("waiting for %s %s: %w", k.Name(), key, context.Cause(ctx))
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, false, nil
			}
			switch ev.Type {
			case watch.Deleted:
				return nil, false, fmt.Errorf("%s %s was deleted", k.Name(), key)
			case watch.Added, watch.Modified:
				obj, ok := ev.Object.(client.Object)
				if !ok {
					continue
				}
				if done, err := check(obj); done || err != nil {
					return obj, true, err
				}
			case watch.Error:
				return nil, false, nil
			}
		}
	}
}
