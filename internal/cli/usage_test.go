package cli

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// A verb on one object with a missing argument prints its usage line; given a NAME
// alone it says that the kind comes first. diff's usage errors exit 2 (its 1 means
// changes), every other verb's 1.
func TestArgumentErrorsShowUsageAndTheKindFirst(t *testing.T) {
	for _, tt := range []struct {
		verb, use string
		code      int
	}{
		{"tree", "gitsync tree app NAME [--children] [-o json] [flags]", 1},
		{"diff", "gitsync diff app NAME [--path DIR | --revision SHA|BRANCH] [flags]", 2},
		{"wait", "gitsync wait app NAME --for synced|healthy|ready [--timeout D] [flags]", 1},
		{"history", "gitsync history app NAME [-o table|json|yaml] [flags]", 1},
		{"rollback", "gitsync rollback app NAME --to REVISION [flags]", 1},
		{"events", "gitsync events app NAME [flags]", 1},
		{"logs", "gitsync logs app NAME [flags]", 1},
		{"build", "gitsync build app NAME [--path DIR] [--from-file app.yaml] [--show-secrets] [flags]", 1},
	} {
		t.Run(tt.verb, func(t *testing.T) {
			g := NewWithT(t)
			r := gitsync(t, tt.verb)
			g.Expect(r.code).To(Equal(tt.code), r.String())
			g.Expect(r.out).To(BeEmpty())
			g.Expect(r.err).To(Equal("error: accepts 2 arg(s), received 0\n\nUsage:\n  " + tt.use + "\n\n" +
				"Run 'gitsync " + tt.verb + " --help' for examples and flags.\n"))

			r = gitsync(t, tt.verb, "demo")
			g.Expect(r.code).To(Equal(tt.code), r.String())
			g.Expect(r.err).To(Equal("error: accepts 2 arg(s), received 1\n\nUsage:\n  " + tt.use + "\n\n" +
				"Did you mean this?\n\tgitsync " + tt.verb + " app demo\n\n" +
				"Run 'gitsync " + tt.verb + " --help' for examples and flags.\n"))

			// The kind without its NAME: the usage line says what is missing.
			r = gitsync(t, tt.verb, "app")
			g.Expect(r.code).To(Equal(tt.code), r.String())
			g.Expect(r.err).To(HavePrefix("error: accepts 2 arg(s), received 1\n\nUsage:\n  " + tt.use + "\n\nRun"))
		})
	}

	g := NewWithT(t)
	r := gitsync(t, "suspend", "demo")
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.err).To(ContainSubstring("Did you mean this?\n\tgitsync suspend app demo\n\tgitsync suspend source demo\n\tgitsync suspend helmrepo demo\n"))

	r = gitsync(t, "tree", "app", "web", "--childs")
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.err).To(Equal("error: unknown flag: --childs\n\nUsage:\n  gitsync tree app NAME [--children] [-o json] [flags]\n\n" +
		"Run 'gitsync tree --help' for examples and flags.\n"))
}

// Another tool's habit gets the gitsync command it means, not cobra's nearest verb by
// spelling (`app` is two letters from `mcp`).
func TestUnknownCommandSuggestsWhatIsMeant(t *testing.T) {
	g := NewWithT(t)
	for args, want := range map[string]string{
		"app list":           "gitsync get apps",
		"apps":               "gitsync get apps",
		"app get web":        "gitsync get app web",
		"app sync web":       "gitsync reconcile app web",
		"app history web":    "gitsync history app web",
		"source list":        "gitsync get sources",
		"reconcil app web":   "gitsync reconcile app web",
		"helmrepos ls":       "gitsync get helmrepos",
		"application diff x": "gitsync diff app x",
	} {
		r := gitsync(t, strings.Fields(args)...)
		g.Expect(r.code).To(Equal(1), r.String())
		word := strings.Fields(args)[0]
		g.Expect(r.err).To(Equal("error: unknown command \""+word+"\" for \"gitsync\"\n\nDid you mean this?\n\t"+want+"\n\n"+
			"Run 'gitsync --help' for examples and flags.\n"), args)
	}
	r := gitsync(t, "list")
	g.Expect(r.err).To(ContainSubstring("Did you mean this?\n\tgitsync get apps\n\tgitsync get sources\n"))
}

// A verb's help shows its own flags first, then the three kubeconfig flags people use;
// the other kubeconfig flags are listed by `gitsync options`, as kubectl's are.
func TestHelpShowsTheCommandsOwnFlagsFirst(t *testing.T) {
	g := NewWithT(t)
	r := gitsync(t, "tree", "--help")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("\nFlags:\n      --children "))
	flags, rest, ok := strings.Cut(r.out, "\nFlags:\n")
	g.Expect(ok).To(BeTrue(), r.out)
	g.Expect(flags).To(HavePrefix("Show an Application's inventory"))
	own, cluster, ok := strings.Cut(rest, "\n\nCluster flags:\n")
	g.Expect(ok).To(BeTrue(), r.out)
	g.Expect(strings.Count(own, "\n")).To(Equal(2), "--children, -h, -o: %s", own)
	for _, f := range []string{"--children", "--help", "--output"} {
		g.Expect(own).To(ContainSubstring(f))
	}
	g.Expect(cluster).To(MatchRegexp(`^      --context string +The name of the kubeconfig context to use\n` +
		`      --kubeconfig string +Path to the kubeconfig file to use for CLI requests.\n` +
		`  -n, --namespace string +If present, the namespace scope for this CLI request\n\n` +
		`Use "gitsync options" for the other 17 kubeconfig flags \(--as, --token, --server ...\), which every command takes.\n$`))
	for _, f := range []string{"--as string", "--token string", "--server string", "--insecure-skip-tls-verify", "--cache-dir"} {
		g.Expect(r.out).NotTo(ContainSubstring(f))
	}

	r = gitsync(t, "options")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(HavePrefix("The following options can be passed to any command:\n\n"))
	for _, f := range []string{"--as string", "--token string", "-s, --server string", "--insecure-skip-tls-verify", "--kubeconfig string", "-n, --namespace string"} {
		g.Expect(r.out).To(ContainSubstring(f))
	}
	g.Expect(strings.Count(r.out, "\n  ")).To(Equal(20), r.out)

	// get's own -A and -o come before the cluster flags.
	r = gitsync(t, "get", "--help")
	g.Expect(r.code).To(Equal(0), r.String())
	own, _, _ = strings.Cut(r.out, "Cluster flags:")
	g.Expect(own).To(ContainSubstring("-A, --all-namespaces"))
	g.Expect(own).To(ContainSubstring("--status-selector"))

	// bootstrap git's own --token (Git's) is its own flag, not the kubeconfig's.
	r = gitsync(t, "bootstrap", "git", "--help")
	g.Expect(r.code).To(Equal(0), r.String())
	own, cluster, _ = strings.Cut(r.out, "Cluster flags:")
	g.Expect(own).To(MatchRegexp(`\n      --token string +HTTP bearer token`))
	g.Expect(cluster).To(ContainSubstring(`Use "gitsync options" for the other 16 kubeconfig flags (--as, --server, --user ...)`))
}

// `build appset --help` is the appset form's help: its own use line and description,
// without the flags only `build app` takes; `build app --help` keeps the app form.
func TestBuildAppSetHelp(t *testing.T) {
	g := NewWithT(t)
	r := gitsync(t, "build", "appset", "--help")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(HavePrefix("Prints the Applications the ApplicationSet generates now"))
	g.Expect(r.out).To(ContainSubstring("\nUsage:\n  gitsync build appset NAME [flags]\n"))
	g.Expect(r.out).NotTo(ContainSubstring("build app NAME"))
	for _, f := range []string{"--path", "--from-file", "--show-secrets", "--decrypt", "--lookup", "--root"} {
		g.Expect(r.out).NotTo(ContainSubstring(f))
	}
	g.Expect(r.out).To(ContainSubstring("-n, --namespace string"))

	r = gitsync(t, "build", "app", "--help")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("\nUsage:\n  gitsync build app NAME [--path DIR] [--from-file app.yaml] [--show-secrets] [flags]\n"))
	g.Expect(r.out).To(ContainSubstring("--from-file string"))
}

// diff and rollback show their appset form's help for `appset --help`, without the flags
// only the app form takes.
func TestDiffAndRollbackAppSetHelp(t *testing.T) {
	g := NewWithT(t)
	r := gitsync(t, "diff", "appset", "--help")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(HavePrefix("Compares the Applications the ApplicationSet generates now"))
	g.Expect(r.out).To(ContainSubstring("\nUsage:\n  gitsync diff appset NAME [flags]\n"))
	for _, f := range []string{"--path", "--root", "--decrypt", "--revision", "--lookup"} {
		g.Expect(r.out).NotTo(ContainSubstring(f))
	}
	g.Expect(r.out).To(ContainSubstring("--exit-code"))

	r = gitsync(t, "rollback", "appset", "--help")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(HavePrefix("Sets the ApplicationSet's spec.rollback"))
	g.Expect(r.out).To(ContainSubstring("\nUsage:\n  gitsync rollback appset NAME --to REVISION [flags]\n"))

	r = gitsync(t, "diff", "app", "--help")
	g.Expect(r.code).To(Equal(0), r.String())
	g.Expect(r.out).To(ContainSubstring("--revision string"))
}
