package layering

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"path"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/gitsync-dev/gitsync/"

// rule forbids packages matching from to import packages matching to (direct imports;
// see deps for the whole graph). A pattern is a package path under the module,
// "x/..." for x and everything below it.
type rule struct {
	from, to []string
	// except lists packages matching from that the rule does not apply to.
	except []string
	why    string
}

// controllerKinds are the controllers, one package per kind; kit is their shared runtime.
var controllerKinds = []string{"internal/controller/application", "internal/controller/sources", "internal/controller/selfheal", "internal/controller/notification", "internal/controller/applicationset", "internal/controller/cluster", "internal/controller/image"}

// rules are the design's arrows that must never point the other way.
var rules = []rule{
	{from: []string{"..."}, except: []string{"internal/operator", "internal/controller/..."},
		to:  []string{"internal/controller/..."},
		why: "only internal/operator composes the controllers"},
	{from: controllerKinds, to: controllerKinds,
		why: "controllers do not call each other: they meet through status and internal/desired"},
	{from: []string{"internal/controller/kit"}, to: controllerKinds,
		why: "the shared runtime is below the controllers"},
	{from: []string{"internal/cli/...", "internal/ui/...", "internal/mcp/..."},
		to:  []string{"internal/controller/...", "internal/operator/..."},
		why: "people's tools work over render, compare and tree, never over a controller"},
	{from: []string{"internal/operations/..."},
		to:  []string{"internal/controller/...", "internal/operator/...", "internal/cli/...", "internal/ui/...", "internal/mcp/..."},
		why: "a person's operations are below the tools that present them, and work over the API server, never through a controller"},
	{from: []string{"internal/controller/...", "internal/operator/..."}, to: []string{"internal/operations/..."},
		why: "controllers know nothing of a person's operations (a request they write themselves goes through the API type's helper, e.g. gitsyncv1.RequestReconcile)"},
	{from: []string{"internal/ui/...", "internal/mcp/..."},
		to:  []string{"internal/cli/..."},
		why: "people's tools present internal/operations and do not import each other"},
	{from: []string{"internal/cli/..."}, to: []string{"internal/ui/...", "internal/mcp/..."},
		why: "people's tools present internal/operations and do not import each other (cmd/gitsync adds ui and mcp to the CLI's commands)"},
	{from: []string{"internal/ui/..."}, to: []string{"internal/mcp/..."},
		why: "people's tools present internal/operations and do not import each other"},
	{from: []string{"internal/mcp/..."}, to: []string{"internal/ui/..."},
		why: "people's tools present internal/operations and do not import each other"},
	{from: []string{"internal/controller/..."},
		to:  []string{"internal/cli/...", "internal/ui/...", "internal/mcp/...", "internal/operator/...", "internal/demo/..."},
		why: "controllers are composed by internal/operator, and know nothing of people's tools"},
	{from: []string{"internal/render/...", "internal/renderworker/..."},
		to:  []string{"internal/controller/...", "internal/cli/...", "internal/ui/...", "internal/operator/...", "internal/drift/..."},
		why: "the render (and the worker processes it runs in) is below everything that uses it"},
	{from: []string{"internal/controller/sources", "internal/controller/kit", "internal/controller/selfheal"},
		to:  []string{"internal/render/..."},
		why: "the source, shared-runtime and drift controllers never render: they name sources through internal/sourceid and read spec rules from the Application"},
	{from: []string{"internal/sourceid/..."},
		to:  []string{"internal/render/...", "internal/controller/...", "internal/cli/...", "internal/ui/...", "internal/mcp/...", "internal/operator/...", "internal/apply/...", "internal/drift/...", "internal/phase/..."},
		why: "source identity is below the render and the controllers that name sources"},
	{from: []string{"internal/source/...", "internal/chartrepo/...", "internal/oci/..."},
		to:  []string{"internal/sourceid/..."},
		why: "the fetchers are below the identity that names what they fetch"},
	{from: []string{"internal/source/...", "internal/chartrepo/...", "internal/oci/...", "internal/build/...", "internal/helm/...", "internal/egress/..."},
		to:  []string{"internal/controller/...", "internal/render/...", "internal/apply/...", "internal/drift/...", "internal/phase/...", "internal/cli/...", "internal/ui/...", "internal/operator/..."},
		why: "sources and renderers are leaves"},
	{from: []string{"internal/verify/..."},
		to:  []string{"internal/source/...", "internal/chartrepo/...", "internal/oci/...", "internal/sourceid/...", "internal/controller/...", "internal/render/...", "internal/operator/...", "sigs.k8s.io/controller-runtime/...", "k8s.io/client-go/..."},
		why: "verification is one leaf that every source calls: it gets keys and bytes, holds no Kubernetes client and knows no source kind"},
	{from: []string{"internal/apply/...", "internal/drift/...", "internal/phase/..."},
		to:  []string{"internal/controller/...", "internal/render/...", "internal/cli/...", "internal/ui/...", "internal/operator/..."},
		why: "apply, ordering and drift are below the controllers"},
	{from: []string{"internal/apply/..."},
		to:  []string{"internal/drift/...", "internal/phase/..."},
		why: "leaf packages do not import each other: a small interface at the consumer instead"},
	{from: []string{"internal/drift/..."},
		to:  []string{"internal/apply/...", "internal/phase/..."},
		why: "leaf packages do not import each other: a small interface at the consumer instead"},
	{from: []string{"internal/attest/..."},
		to:  []string{"internal/controller/...", "internal/operator/...", "internal/operations/...", "internal/cli/...", "internal/ui/...", "internal/mcp/...", "internal/render/...", "internal/apply/..."},
		why: "sync attestations (make, sign, keep, check) are below both the sync that writes them and the verify that reads them"},
	{from: []string{"internal/impersonate/..."},
		to:  []string{"internal/controller/...", "internal/render/...", "internal/cli/...", "internal/ui/...", "internal/operator/...", "internal/desired/..."},
		why: "who an Application applies as (impersonate) is below the controllers that share it"},
	{from: []string{"internal/cluster/..."},
		to:  []string{"internal/controller/...", "internal/render/...", "internal/apply/...", "internal/desired/...", "internal/operations/...", "internal/cli/...", "internal/ui/...", "internal/mcp/...", "internal/operator/..."},
		why: "reaching another cluster (internal/cluster) is below the controllers and the people's tools that share it"},
	{from: []string{"internal/desired/..."},
		to:  []string{"internal/controller/...", "internal/render/...", "internal/cli/...", "internal/ui/...", "internal/operator/..."},
		why: "the desired state is below the controllers it links"},
	{from: []string{"internal/install/...", "internal/bootstrap/...", "internal/uninstall/..."},
		to:  []string{"internal/controller/...", "internal/operator/...", "internal/cli/...", "internal/ui/...", "internal/mcp/..."},
		why: "installing and removing gitsync works over the API server and Git, never through a controller (uninstall must not link the finalize path)"},
	{from: []string{"internal/forge/..."},
		to:  []string{"internal/controller/...", "internal/operator/...", "internal/operations/...", "internal/render/...", "internal/notify/...", "internal/preview/...", "internal/webhook/...", "internal/cli/...", "internal/ui/..."},
		why: "the forge client is a leaf: notifications, previews and generators call it"},
	{from: []string{"internal/preview/..."},
		to:  []string{"internal/controller/...", "internal/operator/...", "internal/cli/...", "internal/ui/...", "internal/mcp/...", "internal/webhook/..."},
		why: "the preview runner works over render, compare and the forge; the operator wires it to the webhook receiver"},
	{from: []string{"internal/webhook/..."},
		to:  []string{"internal/controller/...", "internal/operator/...", "internal/preview/...", "internal/operations/...", "internal/render/..."},
		why: "the webhook receiver hands wakes and preview requests to interfaces the operator fills"},
	{from: []string{"..."}, to: []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/informers"},
		why: "client-go's Clientset and informer factory hold every API group's typed client, informer and lister behind interfaces, so the linker keeps them all (17 MiB of the binary, most of it resident in the operator and in the benchmarks' process): use one group's typed client (k8s.io/client-go/kubernetes/typed/<group>/<version>), a ListWatch informer, or controller-runtime's client"},
	{from: []string{"..."}, except: []string{"internal/health"},
		to:  []string{"github.com/fluxcd/cli-utils/pkg/kstatus/...", "internal/celhealth"},
		why: "nothing but internal/health judges health (one typed status, one order, one judge per Application): kstatus and the CEL checks are its engine"},
	{from: []string{"internal/appset/..."},
		to:  []string{"internal/controller/...", "internal/operator/...", "internal/operations/...", "internal/cli/...", "internal/ui/...", "internal/mcp/...", "internal/render/...", "internal/apply/..."},
		why: "generating Applications (generators, template, the rollout decision) is pure: below the ApplicationSet controller and the CLI that both use it, and it renders or applies nothing"},
	{from: []string{"internal/syncwindow/..."},
		to:  []string{"internal/..."},
		why: "sync windows are a pure decision over the API types and a clock: a leaf"},
	{from: []string{"internal/imagescan/...", "internal/imagepolicy/...", "internal/imageupdate/..."},
		to:  []string{"internal/controller/...", "internal/render/...", "internal/apply/...", "internal/drift/...", "internal/cli/...", "internal/ui/...", "internal/mcp/...", "internal/operator/...", "internal/operations/..."},
		why: "image automation's pieces (scan, choose, rewrite and push) are leaves below their controller, internal/controller/image"},
	{from: []string{"internal/imagescan/...", "internal/imagepolicy/..."}, to: []string{"internal/imageupdate/..."},
		why: "leaf packages do not import each other: scanning and choosing know nothing of Git"},
	{from: []string{"internal/health/...", "internal/celhealth/..."},
		to:  []string{"internal/apply/...", "internal/impersonate/...", "internal/phase/...", "internal/tree/...", "internal/render/...", "internal/drift/...", "internal/controller/...", "internal/cli/...", "internal/ui/...", "internal/mcp/...", "internal/operator/..."},
		why: "health is below everything that asks it"},
}

// noDeps lists packages whose whole dependency graph (not only direct imports) must not
// reach the given packages: test helpers and envtest stay out of the operator.
var noDeps = []rule{
	{from: []string{"internal/operator", "internal/controller/...", "internal/render/...", "internal/renderworker/...", "internal/cli/...", "internal/desired", "internal/impersonate", "internal/install/...", "internal/bootstrap/...", "internal/uninstall/..."},
		to:  []string{"internal/testutil/...", "internal/localcluster/...", "sigs.k8s.io/controller-runtime/pkg/envtest"},
		why: "nothing of the tests (or envtest) is linked into the operator's code path"},
	{from: []string{"cmd/...", "internal/operator", "internal/controller/...", "internal/render/...", "internal/decrypt/...", "internal/sopsfile/...", "internal/cli/...", "internal/demo/..."},
		to: []string{"internal/testutil/sopsenc/...", "github.com/getsops/sops/v3/...", "github.com/aws/...", "github.com/Azure/azure-sdk-for-go/...", "cloud.google.com/go/...",
			"google.golang.org/api/...", "github.com/hashicorp/vault/..."},
		why: "SOPS' packages link the cloud key services' SDKs (60 MB of binary, tens of MiB of resident memory): the binary reads SOPS files with internal/sopsfile, and only tests encrypt with SOPS itself (internal/testutil/sopsenc). github.com/Azure/go-ntlmssp is not one of them: it is go-ldap's NTLM bind, which notation-go links for its DN parsing"},
	{from: []string{"cmd/...", "internal/operator", "internal/controller/..."}, to: []string{"k8s.io/apiserver/..."},
		why: "k8s.io/apiserver links gRPC, OpenTelemetry and the API server's CEL libraries (5.6 MiB of the binary, most of it resident): /metrics is authorized by internal/monitoring's own TokenReview and SubjectAccessReview filter (ScrapeFilter)"},
}

// goList returns, for each package of the module (tests excluded), its imports
// (deps=false) or its whole dependency graph (deps=true).
func goList(t *testing.T, deps bool) map[string][]string {
	t.Helper()
	field := "Imports"
	if deps {
		field = "Deps"
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join ."+field+" \" \"}}", module+"...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	graph := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		graph[fields[0]] = fields[1:]
	}
	return graph
}

// matches tells whether pkg (a full import path) matches a pattern.
func matches(pkg string, pattern string) bool {
	if pattern == "..." { // every package of the module
		return strings.HasPrefix(pkg, module)
	}
	full := pattern
	if !strings.Contains(strings.SplitN(pattern, "/", 2)[0], ".") {
		full = module + pattern
	}
	if base, ok := strings.CutSuffix(full, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == full
}

func matchesAny(pkg string, patterns []string) bool {
	for _, p := range patterns {
		if matches(pkg, p) {
			return true
		}
	}
	return false
}

// violations lists the edges of graph that break rules, as "from -> to (why)".
func violations(graph map[string][]string, rules []rule) []string {
	var out []string
	for from, tos := range graph {
		for _, r := range rules {
			if !matchesAny(from, r.from) || matchesAny(from, r.except) {
				continue
			}
			for _, to := range tos {
				if matchesAny(to, r.to) && to != from {
					out = append(out, fmt.Sprintf("%s -> %s (%s)", strings.TrimPrefix(from, module), strings.TrimPrefix(to, module), r.why))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestImportBoundaries(t *testing.T) {
	if v := violations(goList(t, false), rules); len(v) > 0 {
		t.Errorf("forbidden imports:\n%s", strings.Join(v, "\n"))
	}
	if v := violations(goList(t, true), noDeps); len(v) > 0 {
		t.Errorf("forbidden dependencies:\n%s", strings.Join(v, "\n"))
	}
}

// The test fails on a forbidden edge: a graph where the CLI imports a controller, one
// where the operator links envtest through a helper, and one where the binary links SOPS.
func TestImportBoundariesCatchAForbiddenEdge(t *testing.T) {
	graph := map[string][]string{
		module + "internal/cli":                    {module + "internal/render", module + "internal/controller/application"},
		module + "internal/render":                 {module + "internal/helm"},
		module + "internal/controller/application": {module + "internal/render", module + "internal/controller/kit", module + "internal/desired"},
		module + "internal/operator":               {module + "internal/controller/application", module + "internal/controller/selfheal"},
	}
	v := violations(graph, rules)
	if len(v) != 2 || !strings.HasPrefix(v[0], "internal/cli -> internal/controller/application") {
		t.Fatalf("violations = %v, want the edge cli -> controller/application (twice: a tool, and not the operator)", v)
	}
	// A controller calling another controller.
	graph[module+"internal/controller/selfheal"] = []string{module + "internal/controller/application"}
	delete(graph, module+"internal/cli")
	v = violations(graph, rules)
	if len(v) != 1 || !strings.HasPrefix(v[0], "internal/controller/selfheal -> internal/controller/application") {
		t.Fatalf("violations = %v, want the one edge controller/selfheal -> controller/application", v)
	}
	deps := map[string][]string{module + "internal/operator": {"sigs.k8s.io/controller-runtime/pkg/envtest", path.Join(module, "internal/source")}}
	if v := violations(deps, noDeps); len(v) != 1 {
		t.Fatalf("dependency violations = %v, want envtest", v)
	}
	// The binary reaching SOPS (here through the demo and its test helper) is caught.
	sops := map[string][]string{
		module + "cmd/gitsync":   {module + "internal/demo", module + "internal/testutil/sopsenc", "github.com/getsops/sops/v3/aes"},
		module + "internal/demo": {module + "internal/testutil/sopsenc"},
	}
	if v := violations(sops, noDeps); len(v) != 3 {
		t.Fatalf("dependency violations = %v, want cmd/gitsync and internal/demo reaching SOPS", v)
	}
}

// Only internal/health judges health: another package that computes kstatus or runs the
// CEL checks itself is caught, and internal/health doing so is not.
func TestOnlyHealthJudges(t *testing.T) {
	graph := map[string][]string{
		module + "internal/health": {"github.com/fluxcd/cli-utils/pkg/kstatus/status", module + "internal/celhealth"},
		module + "internal/tree":   {module + "internal/health", module + "internal/celhealth"},
		module + "internal/apply":  {module + "internal/health", "github.com/fluxcd/cli-utils/pkg/kstatus/polling"},
	}
	v := violations(graph, rules)
	if len(v) != 2 || !strings.HasPrefix(v[0], "internal/apply -> github.com/fluxcd/cli-utils/pkg/kstatus/polling") ||
		!strings.HasPrefix(v[1], "internal/tree -> internal/celhealth") {
		t.Fatalf("violations = %v, want apply -> kstatus and tree -> celhealth", v)
	}
}

// A source, shared-runtime or drift controller importing render is caught; the
// Application's controller, which renders, is not.
func TestSourceControllersDoNotRender(t *testing.T) {
	graph := map[string][]string{
		module + "internal/controller/sources":     {module + "internal/render", module + "internal/sourceid"},
		module + "internal/controller/kit":         {module + "internal/sourceid"},
		module + "internal/controller/selfheal":    {module + "internal/render/sensitive"},
		module + "internal/controller/application": {module + "internal/render", module + "internal/sourceid"},
		module + "internal/sourceid":               {module + "internal/source", module + "internal/chartrepo"},
	}
	v := violations(graph, rules)
	if len(v) != 2 || !strings.HasPrefix(v[0], "internal/controller/selfheal -> internal/render/sensitive") ||
		!strings.HasPrefix(v[1], "internal/controller/sources -> internal/render") {
		t.Fatalf("violations = %v, want controller/selfheal and controller/sources -> render", v)
	}
	graph[module+"internal/sourceid"] = append(graph[module+"internal/sourceid"], module+"internal/render")
	if v := violations(graph, rules); len(v) != 3 {
		t.Fatalf("violations = %v, want sourceid -> render too", v)
	}
}

// People's tools present internal/operations: the CLI importing the MCP server (as it did
// to offer `gitsync mcp`), the UI importing the CLI (for its diff), and operations
// importing a controller are each caught.
func TestPeoplesToolsDoNotImportEachOther(t *testing.T) {
	graph := map[string][]string{
		module + "internal/cli":        {module + "internal/operations", module + "internal/mcp"},
		module + "internal/ui":         {module + "internal/operations", module + "internal/cli"},
		module + "internal/mcp":        {module + "internal/operations"},
		module + "internal/operations": {module + "internal/render", module + "internal/controller/kit"},
	}
	v := violations(graph, rules)
	// operations -> controller/kit breaks two rules: no tool's layer, and no one but the
	// operator imports a controller.
	want := []string{"internal/cli -> internal/mcp", "internal/operations -> internal/controller/kit",
		"internal/operations -> internal/controller/kit", "internal/ui -> internal/cli"}
	if len(v) != len(want) {
		t.Fatalf("violations = %v, want %v", v, want)
	}
	for i, w := range want {
		if !strings.HasPrefix(v[i], w+" (") {
			t.Errorf("violation %d = %q, want %s", i, v[i], w)
		}
	}
}
