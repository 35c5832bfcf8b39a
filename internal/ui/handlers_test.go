package ui_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

func TestApplicationsAndSources(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	srv := startUI(t, env.Config, ui.Options{})

	resp, body := get(t, srv.URL+"/api/apps")
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(resp.Header.Get("Content-Type")).To(Equal("application/json"))
	var apps struct{ Items []ui.AppRow }
	g.Expect(json.Unmarshal([]byte(body), &apps)).To(Succeed())
	var row *ui.AppRow
	for i := range apps.Items {
		if apps.Items[i].Namespace == f.ns {
			row = &apps.Items[i]
		}
	}
	g.Expect(row).NotTo(BeNil())
	g.Expect(row.Name).To(Equal("web"))
	g.Expect(row.Sync).To(Equal(gitsyncv1.SyncStatusSynced))
	g.Expect(row.Ready).To(Equal("True"))
	g.Expect(row.Revision).To(Equal(f.sha[:7]))
	g.Expect(row.LastResult).To(Equal(gitsyncv1.SyncResultSucceeded))
	g.Expect(row.LastSync).NotTo(BeEmpty())

	resp, body = get(t, srv.URL+"/")
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(resp.Header.Get("Content-Type")).To(HavePrefix("text/html"))
	g.Expect(body).To(ContainSubstring(`href="/apps/` + f.ns + `/web"`))
	g.Expect(body).To(ContainSubstring(`<label>Namespace`))

	resp, body = get(t, srv.URL+"/api/sources")
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(body).To(ContainSubstring(`"revision":"main@sha1:` + f.sha))
	resp, body = get(t, srv.URL+"/sources")
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(body).To(ContainSubstring("main@sha1:" + f.sha))

	resp, _ = get(t, srv.URL+"/api/apps/"+f.ns+"/missing")
	g.Expect(resp.StatusCode).To(Equal(http.StatusNotFound))
	resp, _ = get(t, srv.URL+"/apps/"+f.ns+"/missing")
	g.Expect(resp.StatusCode).To(Equal(http.StatusNotFound))
	resp, _ = get(t, srv.URL+"/static/app.js")
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
}

func TestApplicationTreeDiffAndMaskedSecret(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	f.addChildren(t)
	srv := startUI(t, env.Config, ui.Options{})
	base := srv.URL + "/api/apps/" + f.ns + "/web"

	var d ui.AppDetail
	g.Eventually(func(g Gomega) {
		resp, body := get(t, base)
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
		g.Expect(json.Unmarshal([]byte(body), &d)).To(Succeed())
		dep := findNode(d.Tree, "Deployment/"+f.ns+"/web")
		g.Expect(dep).NotTo(BeNil())
		g.Expect(dep.Children).To(HaveLen(1))
		g.Expect(dep.Children[0].Kind).To(Equal("ReplicaSet"))
		g.Expect(dep.Children[0].Children).To(HaveLen(1))
		g.Expect(dep.Children[0].Children[0].ID).To(Equal("Pod/" + f.ns + "/web-7d9f-abcde"))
	}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	g.Expect(findNode(d.Tree, "ConfigMap/"+f.ns+"/settings").Health).To(Equal(gitsyncv1.HealthStatusHealthy))
	g.Expect(findNode(d.Tree, "Secret/"+f.ns+"/creds").Health).To(Equal(gitsyncv1.HealthStatusHealthy))
	g.Expect(d.Conditions).NotTo(BeEmpty())
	g.Expect(d.History).NotTo(BeEmpty())

	// The Secret: live and Git manifests without its value, in any encoding.
	resp, body := get(t, base+"/object?id=Secret/"+f.ns+"/creds")
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(body).NotTo(ContainSubstring(password))
	g.Expect(body).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString([]byte(password))))
	var secret ui.ObjectView
	g.Expect(json.Unmarshal([]byte(body), &secret)).To(Succeed())
	g.Expect(secret.Action).To(Equal("unchanged"))
	g.Expect(secret.Live).To(ContainSubstring("password: '***'"))
	g.Expect(secret.Git).To(ContainSubstring("password: '***'"))

	// A changed image shows as a field-level diff of the Deployment.
	f.setImage(t, "nginx:9.9")
	var dep ui.ObjectView
	g.Eventually(func(g Gomega) {
		_, body := get(t, base+"/object?id=Deployment/"+f.ns+"/web")
		g.Expect(json.Unmarshal([]byte(body), &dep)).To(Succeed())
		g.Expect(dep.Action).To(Equal("configured"))
	}).WithTimeout(10 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Expect(dep.Fields).To(ContainElement(ContainSubstring("image")))
	g.Expect(dep.Diff).To(ContainSubstring("-      - image: nginx:9.9"))
	g.Expect(dep.Diff).To(ContainSubstring("+      - image: nginx:1.0"))

	// An owned child has its live manifest and no Git one.
	_, body = get(t, base+"/object?id=Pod/"+f.ns+"/web-7d9f-abcde")
	var pod ui.ObjectView
	g.Expect(json.Unmarshal([]byte(body), &pod)).To(Succeed())
	g.Expect(pod.Live).To(ContainSubstring("name: web-7d9f-abcde"))
	g.Expect(pod.Git).To(BeEmpty())
	g.Expect(pod.Note).To(ContainSubstring("not in Git"))
}

func findNode(nodes []*ui.Node, id string) *ui.Node {
	for _, n := range nodes {
		if n.ID == id {
			return n
		}
		if c := findNode(n.Children, id); c != nil {
			return c
		}
	}
	return nil
}

func TestEventsStreamDeliversAChangeLive(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	srv := startUI(t, env.Config, ui.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/events", nil)
	resp, err := httpc.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	g.Expect(resp.Header.Get("Content-Type")).To(Equal("text/event-stream"))
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// Wait for the stream to be open, then change the Application.
	g.Eventually(lines).WithTimeout(5 * time.Second).Should(Receive(Equal(": connected")))
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.app), app)).To(Succeed())
	base := client.MergeFrom(app.DeepCopy())
	app.Labels = map[string]string{"changed": "yes"}
	start := time.Now()
	g.Expect(env.Client.Patch(ctx, app, base)).To(Succeed())
	want := `data: {"kind":"Application","namespace":"` + f.ns + `","name":"web"}`
	for {
		select {
		case l, ok := <-lines:
			g.Expect(ok).To(BeTrue(), "stream closed")
			if l == want {
				g.Expect(time.Since(start)).To(BeNumerically("<", liveBound))
				t.Logf("change event after %s", time.Since(start))
				return
			}
		case <-time.After(liveBound - time.Since(start)):
			t.Fatalf("no change event for the Application within %s", liveBound)
		}
	}
}

func TestActionsNeedTokenSameOriginAndWriteAccess(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	srv := startUI(t, env.Config, ui.Options{})
	_, page := get(t, srv.URL+"/apps/"+f.ns+"/web")
	g.Expect(page).To(ContainSubstring(`data-action="sync"`))
	token := between(page, `name="csrf-token" content="`, `"`)
	g.Expect(token).To(HaveLen(64))
	url := srv.URL + "/api/apps/" + f.ns + "/web/sync"

	post := func(token, origin string) int {
		req, _ := http.NewRequest(http.MethodPost, url, nil)
		if token != "" {
			req.Header.Set("X-CSRF-Token", token)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := httpc.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		return resp.StatusCode
	}
	g.Expect(post("", srv.URL)).To(Equal(http.StatusForbidden))
	g.Expect(post(token, "http://evil.example")).To(Equal(http.StatusForbidden))
	g.Expect(post(strings.Repeat("0", 64), srv.URL)).To(Equal(http.StatusForbidden))
	g.Expect(post(token, srv.URL)).To(Equal(http.StatusOK))
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(f.app), app)).To(Succeed())
	g.Expect(app.Annotations).To(HaveKey(gitsyncv1.RequestedAtAnnotation))

	url = srv.URL + "/api/apps/" + f.ns + "/web/suspend"
	g.Expect(post(token, srv.URL)).To(Equal(http.StatusOK))
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(f.app), app)).To(Succeed())
	g.Expect(app.Spec.Suspend).To(BeTrue())

	// Read-only (the operator's mode): no buttons, and the endpoint refuses.
	ro := startUI(t, env.Config, ui.Options{ReadOnly: true})
	_, page = get(t, ro.URL+"/apps/"+f.ns+"/web")
	g.Expect(page).NotTo(ContainSubstring(`data-action=`))
	g.Expect(page).To(ContainSubstring(`id="tree"`))
	req, _ := http.NewRequest(http.MethodPost, ro.URL+"/api/apps/"+f.ns+"/web/resume", nil)
	req.Header.Set("X-CSRF-Token", between(page, `name="csrf-token" content="`, `"`))
	req.Header.Set("Origin", ro.URL)
	resp, err := httpc.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusForbidden))
}

func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, to)
	return v
}

// liveBound bounds "shows up live" in tests: a change is on the page or the stream well
// under a second (logged, and measured by the benchmarks); the bound leaves room for
// -race and a loaded 2-core CI machine.
const liveBound = 3 * time.Second
