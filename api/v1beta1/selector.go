package v1beta1

import (
	"fmt"
	"strings"
	"unicode"
)

// MaxSyncResources bounds the objects one selective sync names.
const MaxSyncResources = 100

// ResourceSelector names one object of an Application's render for a selective sync:
// `[GROUP/]KIND[/NAMESPACE]/NAME`. A kind starts with an upper-case letter and a group
// never does, which tells `apps/Deployment/web` (group apps) from `Deployment/team-a/web`
// (namespace team-a). Without a namespace, the object's namespace does not matter.
type ResourceSelector struct {
	// Group is "" for the core group; unset (HasGroup false) matches any group.
	Group     string
	HasGroup  bool
	Kind      string
	Namespace string
	Name      string
}

// ParseResourceSelector reads `[GROUP/]KIND[/NAMESPACE]/NAME`.
func ParseResourceSelector(s string) (ResourceSelector, error) {
	parts := strings.Split(s, "/")
	var sel ResourceSelector
	for _, p := range parts {
		if p == "" || strings.ContainsAny(p, ",@ ") {
			return sel, fmt.Errorf("resource %q: want [GROUP/]KIND[/NAMESPACE]/NAME", s)
		}
	}
	isKind := func(p string) bool { return unicode.IsUpper([]rune(p)[0]) }
	switch {
	case len(parts) == 2 && isKind(parts[0]):
		sel.Kind, sel.Name = parts[0], parts[1]
	case len(parts) == 3 && isKind(parts[0]):
		sel.Kind, sel.Namespace, sel.Name = parts[0], parts[1], parts[2]
	case len(parts) == 3 && isKind(parts[1]):
		sel.Group, sel.HasGroup, sel.Kind, sel.Name = parts[0], true, parts[1], parts[2]
	case len(parts) == 4 && isKind(parts[1]):
		sel.Group, sel.HasGroup, sel.Kind, sel.Namespace, sel.Name = parts[0], true, parts[1], parts[2], parts[3]
	default:
		return sel, fmt.Errorf("resource %q: want [GROUP/]KIND[/NAMESPACE]/NAME (a kind starts with an upper-case letter)", s)
	}
	return sel, nil
}

// Matches tells whether the object (group "" for the core group) is the one selected.
func (s ResourceSelector) Matches(group, kind, namespace, name string) bool {
	return (!s.HasGroup || s.Group == group) && s.Kind == kind && (s.Namespace == "" || s.Namespace == namespace) && s.Name == name
}

// String is the selector as ParseResourceSelector reads it.
func (s ResourceSelector) String() string {
	parts := []string{}
	if s.HasGroup {
		parts = append(parts, s.Group)
	}
	parts = append(parts, s.Kind)
	if s.Namespace != "" {
		parts = append(parts, s.Namespace)
	}
	return strings.Join(append(parts, s.Name), "/")
}

// ResourcesRequest is the gitsync.dev/sync-resources value that makes the sync requested
// at requested a selective sync of the resources.
func ResourcesRequest(resources []string, requested string) string {
	return strings.Join(resources, ",") + "@" + requested
}

// RequestedResources is what the pending sync request selects through
// gitsync.dev/sync-resources (nil: the whole revision), or an error naming what does
// not parse.
func (in *Application) RequestedResources() ([]ResourceSelector, error) {
	requested := in.PendingRequest()
	v, ok := in.GetAnnotations()[SyncResourcesAnnotation]
	if requested == "" || !ok {
		return nil, nil
	}
	i := strings.LastIndex(v, "@")
	if i < 0 || v[i+1:] != requested {
		return nil, nil // a request of before
	}
	list := strings.Split(v[:i], ",")
	if len(list) > MaxSyncResources {
		return nil, fmt.Errorf("%s names %d resources (at most %d)", SyncResourcesAnnotation, len(list), MaxSyncResources)
	}
	out := make([]ResourceSelector, 0, len(list))
	for _, s := range list {
		sel, err := ParseResourceSelector(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", SyncResourcesAnnotation, err)
		}
		out = append(out, sel)
	}
	return out, nil
}
