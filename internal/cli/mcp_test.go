package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// mcpSession starts `gitsync mcp ARGS --kubeconfig K` as a subprocess (this test binary
// re-invoked) and connects the SDK's client to it over the process's stdin and stdout.
// Its stderr (the call log) is returned.
func mcpSession(t *testing.T, kubeconfig string, args ...string) (*sdk.ClientSession, *syncBuffer) {
	t.Helper()
	stderr := &syncBuffer{}
	cmd := exec.Command(os.Args[0], append(append([]string{"mcp"}, args...), "--kubeconfig", kubeconfig)...)
	cmd.Env = append(os.Environ(), runCLIEnv+"=1")
	cmd.Stderr = stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "gitsync-test", Version: "v0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	session, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to gitsync mcp: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Cleanup(func() { _ = session.Close() })
	return session, stderr
}

// call calls a tool and returns its text and whether it was a tool error.
func call(t *testing.T, s *sdk.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", tool, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return text.String(), res.IsError
}

func toolNames(t *testing.T, s *sdk.ClientSession) []string {
	t.Helper()
	res, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("listing tools: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

var writeTools = []string{"reconcile", "suspend", "resume", "rollback_application"}

// The read tools answer with the cluster's real state, over the real stdio of
// `gitsync mcp`; the write tools are neither listed nor callable without --allow-write.
func TestMCPReadTools(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	s, log := mcpSession(t, kubeconfigPath)
	rev := "main@sha1:" + f.sha

	names := toolNames(t, s)
	g.Expect(names).To(ContainElements("list_applications", "list_sources", "get_application", "get_source",
		"application_tree", "diff_application", "application_history", "application_events", "explain_application"))
	g.Expect(names).NotTo(ContainElements(writeTools[0]))
	for _, w := range writeTools {
		g.Expect(names).NotTo(ContainElement(w))
	}
	_, err := s.CallTool(context.Background(), &sdk.CallToolParams{Name: "reconcile", Arguments: map[string]any{"namespace": f.ns, "name": "web"}})
	g.Expect(err).To(MatchError(ContainSubstring("unknown tool")))

	text, isErr := call(t, s, "list_applications", map[string]any{"namespace": f.ns})
	g.Expect(isErr).To(BeFalse(), text)
	var apps []map[string]any
	g.Expect(json.Unmarshal([]byte(text), &apps)).To(Succeed(), text)
	g.Expect(apps).To(ConsistOf(And(HaveKeyWithValue("name", "web"), HaveKeyWithValue("ready", "True"),
		HaveKeyWithValue("sync", "Synced"), HaveKeyWithValue("revision", rev))))

	text, isErr = call(t, s, "list_sources", map[string]any{"namespace": f.ns})
	g.Expect(isErr).To(BeFalse(), text)
	g.Expect(text).To(And(ContainSubstring(`"kind": "GitRepository"`), ContainSubstring(`"name": "app-repo"`), ContainSubstring(rev)))

	text, isErr = call(t, s, "get_application", map[string]any{"namespace": f.ns, "name": "web"})
	g.Expect(isErr).To(BeFalse(), text)
	var app gitsyncv1.Application
	g.Expect(json.Unmarshal([]byte(text), &app)).To(Succeed(), text)
	g.Expect(app.Kind).To(Equal("Application"))
	g.Expect(app.Spec.Path).To(Equal("./app"))
	g.Expect(app.Status.LastAppliedRevision).To(Equal(rev))
	g.Expect(text).NotTo(ContainSubstring("managedFields"))
	text, isErr = call(t, s, "get_source", map[string]any{"namespace": f.ns, "name": "app-repo"})
	g.Expect(isErr).To(BeFalse(), text)
	g.Expect(text).To(ContainSubstring(f.srv.HTTPURL("app")))
	text, isErr = call(t, s, "get_application", map[string]any{"namespace": f.ns, "name": "nope"})
	g.Expect(isErr).To(BeTrue())
	g.Expect(text).To(ContainSubstring(`Application "nope" not found`))

	text, isErr = call(t, s, "application_tree", map[string]any{"namespace": f.ns, "name": "web"})
	g.Expect(isErr).To(BeFalse(), text)
	var tree struct {
		Objects []struct{ Kind, Name, Health string }
	}
	g.Expect(json.Unmarshal([]byte(text), &tree)).To(Succeed(), text)
	g.Expect(tree.Objects).To(ConsistOf(
		HaveField("Kind", "ConfigMap"), HaveField("Kind", "Deployment"), HaveField("Kind", "Secret")))
	g.Expect(tree.Objects).To(ContainElement(And(HaveField("Name", "settings"), HaveField("Health", "Healthy"))))

	text, isErr = call(t, s, "application_history", map[string]any{"namespace": f.ns, "name": "web"})
	g.Expect(isErr).To(BeFalse(), text)
	g.Expect(text).To(And(ContainSubstring(rev), ContainSubstring(`"result": "Succeeded"`)))

	g.Eventually(func(g Gomega) {
		text, isErr := call(t, s, "application_events", map[string]any{"namespace": f.ns, "name": "web"})
		g.Expect(isErr).To(BeFalse(), text)
		g.Expect(text).To(And(ContainSubstring(`"reason": "Applied"`), ContainSubstring(`"object": "Application/web"`)))
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

	// diff: nothing to change at the current revision; a branch and a commit SHA render
	// what they hold, with Secret values masked.
	text, isErr = call(t, s, "diff_application", map[string]any{"namespace": f.ns, "name": "web"})
	g.Expect(isErr).To(BeFalse(), text)
	g.Expect(text).To(And(ContainSubstring("revision "+rev), ContainSubstring("no changes (3 unchanged)")))
	feature := f.repo.Commit("feature", "new image", appFiles("nginx:2.0", "new-s3cret-value"))
	text, isErr = call(t, s, "diff_application", map[string]any{"namespace": f.ns, "name": "web", "revision": f.sha})
	g.Expect(isErr).To(BeFalse(), text)
	g.Expect(text).To(And(ContainSubstring("revision "+rev), ContainSubstring("no changes (3 unchanged)")))
	for _, revision := range []string{"feature", "feature@sha1:" + feature} {
		text, isErr = call(t, s, "diff_application", map[string]any{"namespace": f.ns, "name": "web", "revision": revision})
		g.Expect(isErr).To(BeFalse(), text)
		g.Expect(text).To(ContainSubstring("revision feature@sha1:" + feature))
		g.Expect(text).To(ContainSubstring("configured Deployment/" + f.ns + "/web"))
		g.Expect(text).To(ContainSubstring("+      - image: nginx:2.0"))
		g.Expect(text).To(ContainSubstring("configured Secret/" + f.ns + "/creds"))
		for _, secret := range []string{"s3cret", base64.StdEncoding.EncodeToString([]byte("new-s3cret-value"))} {
			g.Expect(text).NotTo(ContainSubstring(secret))
		}
	}
	text, isErr = call(t, s, "diff_application", map[string]any{"namespace": f.ns, "name": "web", "revision": "no-such-branch"})
	g.Expect(isErr).To(BeTrue())
	g.Expect(text).To(ContainSubstring("no-such-branch"))

	// Every call is logged on stderr with its tool name and arguments.
	g.Expect(log.String()).To(ContainSubstring(`tool=list_applications args={"namespace":"` + f.ns + `"} ok`))
	g.Expect(log.String()).To(ContainSubstring(`tool=diff_application args={"namespace":"` + f.ns + `","name":"web","revision":"feature"} ok`))
	g.Expect(log.String()).To(ContainSubstring(`tool=get_application args={"namespace":"` + f.ns + `","name":"nope"} error=`))
}

// explain names what holds an Application back: first an unhealthy Deployment, then a
// render that fails (BuildFailed, with the file).
func TestMCPExplainBuildFailed(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	s, _ := mcpSession(t, kubeconfigPath)

	var e struct {
		OK      bool
		Ready   string
		Reasons []string
	}
	text, isErr := call(t, s, "explain_application", map[string]any{"namespace": f.ns, "name": "web"})
	g.Expect(isErr).To(BeFalse(), text)
	g.Expect(json.Unmarshal([]byte(text), &e)).To(Succeed(), text)
	// Synced and Ready, but no kubelet runs its Pods: explain names the Deployment.
	g.Expect(e.OK).To(BeFalse(), text)
	g.Expect(e.Reasons).To(ConsistOf("health Progressing: Deployment/" + f.ns + "/web: Replicas: 0/1"))

	files := appFiles("nginx:1.0", "old-s3cret-value")
	files["app/broken.yaml"] = "kind: [\n"
	f.repo.Commit("main", "broken", files)
	g.Expect(gitsync(t, "reconcile", "app", "web", "-n", f.ns, "--with-source").code).To(Equal(1))

	text, isErr = call(t, s, "explain_application", map[string]any{"namespace": f.ns, "name": "web"})
	g.Expect(isErr).To(BeFalse(), text)
	g.Expect(json.Unmarshal([]byte(text), &e)).To(Succeed(), text)
	g.Expect(e.OK).To(BeFalse())
	g.Expect(e.Ready).To(Equal("False"))
	g.Expect(e.Reasons).To(ContainElement(And(HavePrefix("Ready=False (BuildFailed)"), ContainSubstring("broken.yaml"))), text)
}

// restrictedKubeconfig is the test kubeconfig impersonating user, who may only read
// gitsync's kinds and events in ns.
func restrictedKubeconfig(t *testing.T, user, ns string) string {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	read := []string{"get", "list", "watch"}
	g.Expect(env.Client.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "view", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"gitsync.dev"}, Resources: []string{"applications", "gitrepositories", "helmrepositories"}, Verbs: read},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: read},
	}})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "view", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: user}}})).To(Succeed())
	raw, err := os.ReadFile(kubeconfigPath)
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := clientcmd.Load(raw)
	g.Expect(err).NotTo(HaveOccurred())
	for _, a := range cfg.AuthInfos {
		a.Impersonate = user
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(clientcmd.WriteToFile(*cfg, path)).To(Succeed())
	return path
}

// With --allow-write the write tools act as the user: an admin reconciles, suspends,
// resumes and rolls back; a user who may only read gets the API server's Forbidden.
func TestMCPWriteToolsAndRBAC(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	ctx := context.Background()
	s, log := mcpSession(t, kubeconfigPath, "--allow-write")
	g.Expect(toolNames(t, s)).To(ContainElements(writeTools))

	sha2 := f.repo.Commit("main", "second", appFiles("nginx:2.0", "old-s3cret-value"))
	text, isErr := call(t, s, "reconcile", map[string]any{"namespace": f.ns, "name": "web", "withSource": true})
	g.Expect(isErr).To(BeFalse(), text)
	g.Expect(text).To(ContainSubstring("Application " + f.ns + "/web: applied revision main@sha1:" + sha2))
	app := &gitsyncv1.Application{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.app), app)).To(Succeed())
	g.Expect(app.Status.LastAppliedRevision).To(Equal("main@sha1:" + sha2))
	g.Expect(app.Status.LastHandledReconcileAt).To(Equal(app.Annotations[gitsyncv1.RequestedAtAnnotation]))

	// rollback pins the first commit; explain says so; resume clears the pin.
	text, isErr = call(t, s, "rollback_application", map[string]any{"namespace": f.ns, "name": "web", "to": f.sha[:10]})
	g.Expect(isErr).To(BeFalse(), text)
	g.Expect(text).To(ContainSubstring("pinned to main@sha1:" + f.sha))
	g.Expect(text).To(ContainSubstring("applied revision main@sha1:" + f.sha))
	text, _ = call(t, s, "explain_application", map[string]any{"namespace": f.ns, "name": "web"})
	g.Expect(text).To(ContainSubstring("pinned to main@sha1:" + f.sha + " by a rollback"))

	text, isErr = call(t, s, "suspend", map[string]any{"namespace": f.ns, "name": "web"})
	g.Expect(isErr).To(BeFalse(), text)
	g.Expect(text).To(Equal("Application " + f.ns + "/web suspended\n"))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.app), app)).To(Succeed())
	g.Expect(app.Spec.Suspend).To(BeTrue())
	text, isErr = call(t, s, "reconcile", map[string]any{"namespace": f.ns, "name": "web"})
	g.Expect(isErr).To(BeTrue())
	g.Expect(text).To(ContainSubstring("is suspended: resume it first"))
	text, isErr = call(t, s, "resume", map[string]any{"namespace": f.ns, "name": "web"})
	g.Expect(isErr).To(BeFalse(), text)
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.app), app)).To(Succeed())
	g.Expect(app.Spec.Suspend).To(BeFalse())
	g.Expect(app.Spec.PinnedRevision).To(BeEmpty())
	f.waitApplied(t, sha2)
	g.Expect(log.String()).To(ContainSubstring(`tool=suspend args={"namespace":"` + f.ns + `","name":"web"} ok`))

	// A user who may read but not patch: reads work, writes are refused by RBAC.
	user := "viewer-" + rand.String(5)
	viewer, viewerLog := mcpSession(t, restrictedKubeconfig(t, user, f.ns), "--allow-write")
	text, isErr = call(t, viewer, "list_applications", map[string]any{"namespace": f.ns})
	g.Expect(isErr).To(BeFalse(), text)
	g.Expect(text).To(ContainSubstring(`"name": "web"`))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.app), app)).To(Succeed())
	before := app.Annotations[gitsyncv1.RequestedAtAnnotation]
	for _, tool := range []string{"reconcile", "suspend"} {
		text, isErr = call(t, viewer, tool, map[string]any{"namespace": f.ns, "name": "web"})
		g.Expect(isErr).To(BeTrue(), tool)
		g.Expect(text).To(And(ContainSubstring("forbidden"), ContainSubstring(`User "`+user+`" cannot patch resource "applications"`)), tool)
	}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(f.app), app)).To(Succeed())
	g.Expect(app.Annotations[gitsyncv1.RequestedAtAnnotation]).To(Equal(before))
	g.Expect(app.Spec.Suspend).To(BeFalse())
	g.Expect(viewerLog.String()).To(ContainSubstring(`tool=reconcile args={"namespace":"` + f.ns + `","name":"web"} error=`))
}
