package ui_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

// Rollback pins only a revision of the history; sync, rollback and preview of a
// suspended Application are refused (409) and leave no request behind; the preview
// answers the objects a sync would change; a read-only UI refuses the preview.
func TestRollbackPreviewAndSuspendedRefusals(t *testing.T) {
	g := NewWithT(t)
	bg := context.Background()
	f := newFixture(t)
	srv := startUI(t, env.Config, ui.Options{})
	_, page := get(t, srv.URL+"/apps/"+f.ns+"/web")
	token := between(page, `name="csrf-token" content="`, `"`)
	base := srv.URL + "/api/apps/" + f.ns + "/web/"
	call := func(method, action, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, base+action, strings.NewReader(body))
		req.Header.Set("X-CSRF-Token", token)
		req.Header.Set("Origin", srv.URL)
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

	code, out := call("POST", "rollback", `{"revision": "main@sha1:0000000000000000000000000000000000000000"}`)
	g.Expect(code).To(Equal(http.StatusBadRequest))
	g.Expect(out["error"]).To(ContainSubstring("not in the history"))
	code, out = call("GET", "preview", "")
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(out["changes"]).To(BeEmpty())
	g.Expect(out["unchanged"]).To(BeNumerically("==", 3))

	rev := "main@sha1:" + f.sha
	code, out = call("POST", "rollback", `{"revision": "`+rev+`"}`)
	g.Expect(code).To(Equal(http.StatusOK), "%v", out)
	g.Expect(env.Client.Get(bg, key, app)).To(Succeed())
	g.Expect(app.Spec.PinnedRevision).To(Equal(rev))

	code, _ = call("POST", "suspend", "")
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(env.Client.Get(bg, key, app)).To(Succeed())
	requested := app.Annotations[gitsyncv1.RequestedAtAnnotation]
	for _, a := range []struct{ method, action, body string }{
		{"POST", "sync", `{"hooks": true}`}, {"POST", "rollback", `{"revision": "` + rev + `"}`}, {"GET", "preview", ""},
	} {
		code, out = call(a.method, a.action, a.body)
		g.Expect(code).To(Equal(http.StatusConflict), a.action)
		g.Expect(out["error"]).To(ContainSubstring("suspended"), a.action)
	}
	g.Expect(env.Client.Get(bg, key, app)).To(Succeed())
	g.Expect(app.Annotations[gitsyncv1.RequestedAtAnnotation]).To(Equal(requested))
	g.Expect(app.Annotations).NotTo(HaveKey(gitsyncv1.RunHooksAnnotation))

	// Resume follows the source again (the pin goes), as `gitsync resume` does.
	code, _ = call("POST", "resume", "")
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(env.Client.Get(bg, key, app)).To(Succeed())
	g.Expect(app.Spec.Suspend).To(BeFalse())
	g.Expect(app.Spec.PinnedRevision).To(BeEmpty())

	ro := startUI(t, env.Config, ui.Options{ReadOnly: true})
	resp, body := get(t, ro.URL+"/api/apps/"+f.ns+"/web/preview")
	g.Expect(resp.StatusCode).To(Equal(http.StatusForbidden), body)
}
