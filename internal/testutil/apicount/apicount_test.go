package apicount

import (
	"net/http/httptest"
	"testing"
)

func TestVerb(t *testing.T) {
	cases := []struct{ method, url, verb string }{
		{"GET", "/api/v1/namespaces/a/configmaps", "list"},
		{"GET", "/api/v1/namespaces/a/configmaps?watch=true", "watch"},
		{"GET", "/api/v1/namespaces/a/configmaps/b", "get"},
		{"GET", "/api/v1/namespaces/a", "get"},
		{"GET", "/api/v1/namespaces", "list"},
		{"GET", "/apis/apps/v1/namespaces/a/deployments/d", "get"},
		{"GET", "/apis/apps/v1/deployments", "list"},
		{"GET", "/apis/gitsync.dev/v1alpha1/namespaces/a/applications/x/status", "get"},
		{"PATCH", "/api/v1/namespaces/a/configmaps/b?dryRun=All&fieldManager=gitsync", "dry-run-patch"},
		{"PATCH", "/api/v1/namespaces/a/configmaps/b?fieldManager=gitsync", "patch"},
		{"POST", "/api/v1/namespaces/a/configmaps", "create"},
		{"PUT", "/api/v1/namespaces/a/configmaps/b", "update"},
		{"DELETE", "/api/v1/namespaces/a/configmaps/b", "delete"},
	}
	for _, tc := range cases {
		if got := Verb(httptest.NewRequest(tc.method, tc.url, nil)); got != tc.verb {
			t.Errorf("%s %s: got %s, want %s", tc.method, tc.url, got, tc.verb)
		}
	}
	for path, want := range map[string]string{
		"/api/v1/namespaces/a/configmaps/b":                             "configmaps",
		"/api/v1/namespaces/a/configmaps":                               "configmaps",
		"/apis/gitsync.dev/v1alpha1/namespaces/a/applications/x/status": "applications/status",
		"/api/v1/namespaces/a":                                          "namespaces",
		"/apis/apps/v1":                                                 "discovery",
		"/apis":                                                         "discovery",
	} {
		if got := Resource(path); got != want {
			t.Errorf("Resource(%s) = %s, want %s", path, got, want)
		}
	}
	counts := map[string]int{"get": 2, "patch": 1, "dry-run-patch": 4, "delete": 1}
	if Writes(counts) != 2 || Total(counts) != 8 || Format(counts) != "delete=1 dry-run-patch=4 get=2 patch=1" {
		t.Errorf("Writes/Total/Format: %d %d %q", Writes(counts), Total(counts), Format(counts))
	}
}

func TestNamespace(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/namespaces/a/configmaps":                               "a",
		"/api/v1/namespaces/a/configmaps/b":                             "a",
		"/apis/apps/v1/namespaces/team-b/deployments/d":                 "team-b",
		"/apis/gitsync.dev/v1alpha1/namespaces/a/applications/x/status": "a",
		"/api/v1/namespaces/a":                                          "",
		"/api/v1/namespaces":                                            "",
		"/apis/apps/v1/deployments":                                     "",
		"/api/v1/configmaps":                                            "",
		"/apis/x/v1/namespaces/a":                                       "",
	} {
		if got := Namespace(path); got != want {
			t.Errorf("Namespace(%q) = %q, want %q", path, got, want)
		}
	}
}
