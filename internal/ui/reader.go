package ui

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// resourceOf maps gvk to its resource, and says whether it is cluster-scoped.
func (s *Server) resourceOf(gvk schema.GroupVersionKind) (schema.GroupResource, bool, error) {
	mapping, err := s.direct.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupResource{}, false, err
	}
	return mapping.Resource.GroupResource(), mapping.Scope.Name() == apimeta.RESTScopeNameRoot, nil
}

// mayDo says whether who may do verb on objects of gvk in namespace (by name when set).
// A cluster-scoped kind is asked about without a namespace.
func (s *Server) mayDo(ctx context.Context, who *caller, verb string, gvk schema.GroupVersionKind, namespace, name string) bool {
	if who.user == nil {
		return true
	}
	gr, clusterScoped, err := s.resourceOf(gvk)
	if err != nil {
		return false
	}
	if clusterScoped {
		namespace = ""
	}
	return s.reviews.may(ctx, who, verb, gr, namespace, name)
}

func (s *Server) mayList(ctx context.Context, who *caller, gvk schema.GroupVersionKind, namespace string) bool {
	return s.mayDo(ctx, who, "list", gvk, namespace, "")
}

// mayGet asks first whether who may get every object of the kind in the namespace (one
// review, cached per caller, kind and namespace, covers a whole tree), and only when not,
// about the object by name.
func (s *Server) mayGet(ctx context.Context, who *caller, gvk schema.GroupVersionKind, namespace, name string) bool {
	if s.mayDo(ctx, who, "get", gvk, namespace, "") {
		return true
	}
	return name != "" && s.mayDo(ctx, who, "get", gvk, namespace, name)
}

// callerReader reads the Server's cache for one caller: a Get needs the caller's `get`
// of the object, a List its `list` in the namespace, and only then may the Server start
// an informer for the kind (canRead). What the caller may not read is Forbidden, which the
// tree shows as an object of unknown health.
type callerReader struct {
	s   *Server
	who *caller
}

func (r callerReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gvk, err := apiutil.GVKForObject(obj, r.s.scheme)
	if err != nil {
		return err
	}
	if !r.s.mayGet(ctx, r.who, gvk, key.Namespace, key.Name) || !r.s.canRead(ctx, gvk) {
		return forbidden(gvk, key.Name)
	}
	return r.s.cache.Get(ctx, key, obj, opts...)
}

func (r callerReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk, err := apiutil.GVKForObject(list, r.s.scheme)
	if err != nil {
		return err
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	if !r.s.mayList(ctx, r.who, gvk, lo.Namespace) || !r.s.canRead(ctx, gvk) {
		return forbidden(gvk, "")
	}
	return r.s.cache.List(ctx, list, opts...)
}

func forbidden(gvk schema.GroupVersionKind, name string) error {
	return apierrors.NewForbidden(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, name,
		fmt.Errorf("you may not read %s here: %w", gvk.Kind, errForbidden))
}
