package v1beta1

import (
	"testing"
	"time"
)

func TestParseResourceSelector(t *testing.T) {
	cases := []struct {
		in   string
		want ResourceSelector
		err  bool
	}{
		{in: "ConfigMap/web", want: ResourceSelector{Kind: "ConfigMap", Name: "web"}},
		{in: "ConfigMap/team-a/web", want: ResourceSelector{Kind: "ConfigMap", Namespace: "team-a", Name: "web"}},
		{in: "apps/Deployment/web", want: ResourceSelector{Group: "apps", HasGroup: true, Kind: "Deployment", Name: "web"}},
		{in: "apps/Deployment/team-a/web", want: ResourceSelector{Group: "apps", HasGroup: true, Kind: "Deployment", Namespace: "team-a", Name: "web"}},
		{in: "rbac.authorization.k8s.io/Role/team-a/r", want: ResourceSelector{Group: "rbac.authorization.k8s.io", HasGroup: true, Kind: "Role", Namespace: "team-a", Name: "r"}},
		{in: "web", err: true},
		{in: "configmap/web", err: true},
		{in: "apps/deployment/team-a/web", err: true},
		{in: "ConfigMap//web", err: true},
		{in: "ConfigMap/a,b", err: true},
		{in: "a/b/C/d/e", err: true},
	}
	for _, c := range cases {
		got, err := ParseResourceSelector(c.in)
		if (err != nil) != c.err || (!c.err && got != c.want) {
			t.Errorf("%q: %+v, %v; want %+v (error %v)", c.in, got, err, c.want, c.err)
		}
		if !c.err && got.String() != c.in {
			t.Errorf("%q: String() %q", c.in, got.String())
		}
	}
	sel, _ := ParseResourceSelector("Deployment/web")
	if !sel.Matches("apps", "Deployment", "any", "web") || sel.Matches("apps", "Deployment", "any", "api") {
		t.Error("a selector without group and namespace matches by kind and name")
	}
	sel, _ = ParseResourceSelector("ConfigMap/team-a/web")
	if sel.Matches("", "ConfigMap", "team-b", "web") {
		t.Error("a selector with a namespace matches that namespace only")
	}
}

// The selection belongs to one request: an older request's, or none, selects nothing.
func TestRequestedResources(t *testing.T) {
	app := &Application{}
	requested := app.RequestSync(time.Unix(100, 0), false, nil)
	app.Annotations[SyncResourcesAnnotation] = ResourcesRequest([]string{"ConfigMap/a", "apps/Deployment/web"}, requested)
	sel, err := app.RequestedResources()
	if err != nil || len(sel) != 2 || sel[1].Kind != "Deployment" {
		t.Fatalf("%+v, %v", sel, err)
	}
	app.Status.LastHandledReconcileAt = requested
	if sel, err := app.RequestedResources(); sel != nil || err != nil {
		t.Fatalf("handled: %+v, %v", sel, err)
	}
	app.RequestSync(time.Unix(200, 0), false, nil)
	if sel, err := app.RequestedResources(); sel != nil || err != nil {
		t.Fatalf("a new request without a selection: %+v, %v", sel, err)
	}
	app.Annotations[SyncResourcesAnnotation] = ResourcesRequest([]string{"web"}, app.PendingRequest())
	if _, err := app.RequestedResources(); err == nil {
		t.Fatal("a selector that does not parse")
	}
}
