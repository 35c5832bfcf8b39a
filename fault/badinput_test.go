package fault

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// badInput is a commit (or a change of the Application) that must be refused.
type badInput struct {
	name string
	// change makes the bad commit on top of the good one, given the fixture; it returns
	// the sha the Application must report as attempted.
	change func(t *testing.T, f *fixture, goodSHA string) string
	// reasons that Ready=False may carry, and a pattern its message must match.
	reasons []string
	message string
}

// badConfigMaps is configmaps.yaml of the good revision with other values: a bad commit
// carries it, so that an apply of any part of the commit shows.
var badConfigMaps = smallRevision("bad", "one", "two", "three", "added").files()["configmaps.yaml"]

// aliasBomb is a YAML alias bomb, 2,000,000 values from 8 lines (twice the 1 Mi-value cap).
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\n")
	b.WriteString(`a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]` + "\n")
	prev := "a"
	for _, name := range []string{"b", "c", "d", "e", "f"} {
		refs := strings.TrimSuffix(strings.Repeat("*"+prev+",", 10), ",")
		fmt.Fprintf(&b, "%s: &%s [%s]\n", name, name, refs)
		prev = name
	}
	b.WriteString("g: [*f,*f]\n")
	return b.String()
}

// bigManifest is a 50 MiB ConfigMap manifest.
func bigManifest() string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  blob: " + strings.Repeat("x", 50<<20) + "\n"
}

func commitFiles(files map[string]string, deletes ...string) func(*testing.T, *fixture, string) string {
	return func(t *testing.T, f *fixture, _ string) string {
		return f.repo.Commit("main", "bad input", files, deletes...)
	}
}

// kustomization lists the good revision's files and extra.
func kustomization(extra ...string) string {
	return "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- configmaps.yaml\n- services.yaml\n" +
		"- " + strings.Join(extra, "\n- ") + "\n"
}

// badInputs are the corpus but the alias bomb (TestAliasBombInAKustomization).
func badInputs() []badInput {
	return []badInput{{
		name:    "50 MiB manifest",
		change:  commitFiles(map[string]string{"configmaps.yaml": badConfigMaps, "big.yaml": bigManifest()}),
		reasons: []string{gitsyncv1.BuildFailedReason},
		message: `(?i)big\.yaml.*(size|large|MiB|bytes|limit)`,
	}, {
		name: "remote base",
		change: commitFiles(map[string]string{
			"configmaps.yaml":    badConfigMaps,
			"kustomization.yaml": kustomization("https://github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v5.4.3"),
		}),
		reasons: []string{gitsyncv1.BuildFailedReason},
		message: `(?i)remote.*not allowed.*github\.com/kubernetes-sigs/kustomize`,
	}, {
		name: "symlink to /etc/passwd",
		change: func(t *testing.T, f *fixture, _ string) string {
			return f.repo.CommitFunc("main", "symlink", func(worktree string) {
				if err := os.WriteFile(filepath.Join(worktree, "configmaps.yaml"), []byte(badConfigMaps), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink("/etc/passwd", filepath.Join(worktree, "passwd.yaml")); err != nil {
					t.Fatal(err)
				}
			})
		},
		reasons: []string{gitsyncv1.BuildFailedReason},
		message: `(?i)passwd\.yaml.*outside|outside.*passwd\.yaml`,
	}, {
		name: "path escaping the checkout",
		change: func(t *testing.T, f *fixture, goodSHA string) string {
			g := NewWithT(t)
			app := f.app(g)
			base := client.MergeFrom(app.DeepCopy())
			app.Spec.Path = "../.."
			g.Expect(env.Client.Patch(t.Context(), app, base)).To(Succeed())
			return goodSHA
		},
		reasons: []string{gitsyncv1.BuildFailedReason},
		message: `(?i)outside`,
	}, {
		name: "unknown kind",
		change: commitFiles(map[string]string{
			"configmaps.yaml": badConfigMaps,
			"gadget.yaml":     "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\nspec:\n  size: 1\n",
		}),
		reasons: []string{gitsyncv1.BuildFailedReason, gitsyncv1.ApplyFailedReason},
		message: `Gadget`,
	}, {
		name: "missing namespace",
		change: commitFiles(map[string]string{
			"configmaps.yaml": badConfigMaps,
			"elsewhere.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: elsewhere\n  namespace: does-not-exist-fault\ndata:\n  a: b\n",
		}),
		reasons: []string{gitsyncv1.ApplyFailedReason},
		message: `does-not-exist-fault`,
	}, {
		name: "exact duplicate",
		change: commitFiles(map[string]string{
			"configmaps.yaml": badConfigMaps,
			"again.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\ndata:\n  revision: again\n",
		}),
		reasons: []string{gitsyncv1.BuildFailedReason},
		message: `(?i)ConfigMap.*one.*(duplicate|also defined|more than once|defined twice)`,
	}, {
		name: "duplicate once the namespace is defaulted",
		change: func(t *testing.T, f *fixture, _ string) string {
			return f.repo.Commit("main", "duplicate in the target namespace", map[string]string{
				"configmaps.yaml": badConfigMaps,
				"again.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n  namespace: " + f.ns + "\ndata:\n  revision: again\n",
			})
		},
		reasons: []string{gitsyncv1.BuildFailedReason, gitsyncv1.ApplyFailedReason},
		message: `(?i)ConfigMap.*one.*(duplicate|also defined|more than once|defined twice)`,
	}, {
		name:    "delete everything with prune",
		change:  commitFiles(map[string]string{"README.md": "nothing here any more\n"}, "configmaps.yaml", "services.yaml"),
		reasons: []string{gitsyncv1.PruneFailedReason},
		message: `allowEmpty`,
	}}
}

// TestBadInput commits each bad input on top of a good revision: the Application says
// Ready=False with a clear message, and the good revision's objects stay exactly as they
// were (nothing of the bad commit is applied, nothing is pruned).
func TestBadInput(t *testing.T) {
	t.Parallel()
	sharedOperator(t)
	for _, tc := range badInputs() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkBadInput(t, tc)
		})
	}
}

// checkBadInput commits a good revision, waits until it is applied, makes the bad change
// and checks the outcome.
func checkBadInput(t *testing.T, tc badInput) {
	good := smallRevision("good", "one", "two", "three")
	f, goodSHA := newFixture(t, good.files(), 2*time.Second)
	f.waitApplied(goodSHA, time.Minute)
	g := NewWithT(t)
	f.checkWorld(g, good)

	badSHA := tc.change(t, f, goodSHA)
	cond := f.waitNotReady(badSHA, time.Minute, tc.reasons...)
	g.Expect(cond.Message).To(MatchRegexp(tc.message), "reason %s", cond.Reason)
	g.Expect(len(cond.Message)).To(BeNumerically("<", 4096), "a message short enough to read")
	g.Expect(cond.Message).NotTo(ContainSubstring("root:"), "no content of /etc/passwd")
	t.Logf("Ready=False %s: %s", cond.Reason, cond.Message)

	// The previous state is intact, and stays so over a few more attempts.
	g.Consistently(func(g Gomega) {
		f.checkWorld(g, good)
		app := f.app(g)
		g.Expect(app.Status.LastAppliedRevision).To(Equal(revision(goodSHA)))
		g.Expect(inventoryIDs(app)).To(Equal(good.inventory(f.ns)))
	}).WithTimeout(3 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
}
