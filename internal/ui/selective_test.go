package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

// The sync action with resources is a selective sync request (gitsync.dev/sync-resources
// tied to this request, as `gitsync sync app NAME --resource` sets it), and says so.
// Refused, leaving no request behind: a selector the CLI's parser refuses, more than 100,
// an object outside the Application's render, resources with hooks or prune or on another
// action, a request from another site, and any request to a read-only UI.
func TestSelectiveSyncAction(t *testing.T) {
	g := NewWithT(t)
	bg := context.Background()
	f := newFixture(t)
	srv := startUI(t, env.Config, ui.Options{})
	_, page := get(t, srv.URL+"/apps/"+f.ns+"/web")
	token := between(page, `name="csrf-token" content="`, `"`)
	call := func(srv *testServer, action, body string, header map[string]string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", srv.URL+"/api/apps/"+f.ns+"/web/"+action, strings.NewReader(body))
		req.Header.Set("X-CSRF-Token", token)
		req.Header.Set("Origin", srv.URL)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := httpc.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out map[string]any
		g.Expect(json.Unmarshal(b, &out)).To(Succeed(), string(b))
		return resp.StatusCode, out
	}
	key := client.ObjectKeyFromObject(f.app)
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(bg, key, app)).To(Succeed())
	requested := app.Annotations[gitsyncv1.RequestedAtAnnotation]

	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprintf("ConfigMap/%s/c%d", f.ns, i)
	}
	manyJSON, _ := json.Marshal(map[string]any{"resources": many})
	outside := "ConfigMap/" + f.ns + "/not-in-git"
	for _, c := range []struct {
		name, action, body string
		header             map[string]string
		code               int
		says               string
	}{
		{"parser", "sync", `{"resources": ["configmap/settings"]}`, nil, http.StatusBadRequest, `want [GROUP/]KIND[/NAMESPACE]/NAME`},
		{"too many", "sync", string(manyJSON), nil, http.StatusBadRequest, "at most 100 objects"},
		{"outside", "sync", `{"resources": ["ConfigMap/` + f.ns + `/settings", "` + outside + `"]}`, nil, http.StatusBadRequest,
			outside + ": not an object of Application " + f.ns + "/web"},
		{"wrong group", "sync", `{"resources": ["apps/ConfigMap/settings"]}`, nil, http.StatusBadRequest, "apps/ConfigMap/settings: not an object"},
		{"hooks", "sync", `{"hooks": true, "resources": ["ConfigMap/settings"]}`, nil, http.StatusBadRequest, "runs no hooks and prunes nothing"},
		{"prune", "sync", `{"prune": true, "resources": ["ConfigMap/settings"]}`, nil, http.StatusBadRequest, "runs no hooks and prunes nothing"},
		{"empty", "sync", `{"resources": []}`, nil, http.StatusBadRequest, "at least one"},
		{"suspend", "suspend", `{"resources": ["ConfigMap/settings"]}`, nil, http.StatusBadRequest, "objects of a sync"},
		{"cross-site", "sync", `{"resources": ["ConfigMap/settings"]}`, map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden, "cross-site"},
	} {
		code, out := call(srv, c.action, c.body, c.header)
		g.Expect(code).To(Equal(c.code), "%s: %v", c.name, out)
		g.Expect(out["error"]).To(ContainSubstring(c.says), c.name)
	}
	g.Expect(env.Client.Get(bg, key, app)).To(Succeed())
	g.Expect(app.Annotations[gitsyncv1.RequestedAtAnnotation]).To(Equal(requested))
	g.Expect(app.Annotations).NotTo(HaveKey(gitsyncv1.SyncResourcesAnnotation))
	g.Expect(app.Spec.Suspend).To(BeFalse())

	ro := startUI(t, env.Config, ui.Options{ReadOnly: true})
	code, out := call(ro, "sync", `{"resources": ["ConfigMap/settings"]}`, nil)
	g.Expect(code).To(Equal(http.StatusForbidden), "%v", out)

	// An object of the render, with and without group and namespace.
	selected := []string{"ConfigMap/" + f.ns + "/settings", "apps/Deployment/web"}
	body, _ := json.Marshal(map[string]any{"resources": selected})
	code, out = call(srv, "sync", string(body), nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", out)
	g.Expect(out["result"]).To(Equal("sync of ConfigMap/" + f.ns + "/settings, apps/Deployment/web requested (selective: no prune)"))
	g.Expect(env.Client.Get(bg, key, app)).To(Succeed())
	requested = app.Annotations[gitsyncv1.RequestedAtAnnotation]
	g.Expect(requested).NotTo(BeEmpty())
	g.Expect(app.Annotations[gitsyncv1.SyncResourcesAnnotation]).To(Equal(gitsyncv1.ResourcesRequest(selected, requested)))
}
