package build

import (
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

const configMapYAML = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: inside\n"

func TestBuildRefusesPathsOutsideCheckout(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root, outside string)
		path  string
		// what the message must name (relative to the checkout)
		want string
	}{
		{
			name: "plain: symlink to a file outside",
			setup: func(t *testing.T, root, outside string) {
				writeFiles(t, root, map[string]string{"apps/cm.yaml": configMapYAML})
				symlink(t, root, filepath.Join(outside, "secret.yaml"), "apps/secret.yaml")
			},
			path: "apps",
			want: `"apps/secret.yaml"`,
		},
		{
			name: "plain: relative symlink to a file outside",
			setup: func(t *testing.T, root, outside string) {
				symlink(t, root, "../../outside/secret.yaml", "apps/secret.yaml")
			},
			path: "apps",
			want: `"apps/secret.yaml"`,
		},
		{
			name: "plain: symlinked directory outside",
			setup: func(t *testing.T, root, outside string) {
				writeFiles(t, root, map[string]string{"apps/cm.yaml": configMapYAML})
				symlink(t, root, outside, "apps/ext")
			},
			path: "apps",
			want: `"apps/ext"`,
		},
		{
			name: "path argument leaving the checkout",
			setup: func(t *testing.T, root, outside string) {
				writeFiles(t, root, map[string]string{"apps/cm.yaml": configMapYAML})
			},
			path: "../..",
			want: `"../.."`,
		},
		{
			name: "path argument through ..",
			setup: func(t *testing.T, root, outside string) {
				writeFiles(t, root, map[string]string{"apps/cm.yaml": configMapYAML})
			},
			path: "apps/../../outside",
			want: `"../outside"`,
		},
		{
			name: "path argument is a symlink to a directory outside",
			setup: func(t *testing.T, root, outside string) {
				symlink(t, root, outside, "apps/link")
			},
			path: "apps/link",
			want: `"apps/link"`,
		},
		{
			name: "kustomize: resources ../../outside",
			setup: func(t *testing.T, root, outside string) {
				writeFiles(t, root, map[string]string{"apps/kustomization.yaml": "resources: [../../outside]\n"})
			},
			path: "apps",
			want: `"../outside"`,
		},
		{
			name: "kustomize: absolute resource path",
			setup: func(t *testing.T, root, outside string) {
				writeFiles(t, root, map[string]string{"apps/kustomization.yaml": "resources: [" + filepath.Join(outside, "secret.yaml") + "]\n"})
			},
			path: "apps",
			want: `"../outside/secret.yaml"`,
		},
		{
			name: "kustomize: resource symlinked to a file outside",
			setup: func(t *testing.T, root, outside string) {
				writeFiles(t, root, map[string]string{"apps/kustomization.yaml": "resources: [secret.yaml]\n"})
				symlink(t, root, filepath.Join(outside, "secret.yaml"), "apps/secret.yaml")
			},
			path: "apps",
			want: `"apps/secret.yaml"`,
		},
		{
			name: "kustomize: base symlinked to a directory outside",
			setup: func(t *testing.T, root, outside string) {
				writeFiles(t, root, map[string]string{"apps/kustomization.yaml": "resources: [base]\n"})
				symlink(t, root, outside, "apps/base")
			},
			path: "apps",
			want: `"apps/base"`,
		},
		{
			name: "kustomize: outside reference in a nested base",
			setup: func(t *testing.T, root, outside string) {
				writeFiles(t, root, map[string]string{
					"apps/overlay/kustomization.yaml": "resources: [../base]\n",
					"apps/base/kustomization.yaml":    "resources: [../../../outside]\n",
				})
			},
			path: "apps/overlay",
			want: `"../outside"`,
		},
		{
			// Not a field the pre-check resolves: the confined file system stops it.
			name: "kustomize: patch file symlinked outside",
			setup: func(t *testing.T, root, outside string) {
				writeFiles(t, root, map[string]string{
					"apps/kustomization.yaml": "resources: [cm.yaml]\npatches:\n- path: patch.yaml\n",
					"apps/cm.yaml":            configMapYAML,
				})
				symlink(t, root, filepath.Join(outside, "secret.yaml"), "apps/patch.yaml")
			},
			path: "apps",
			want: `"apps/patch.yaml"`,
		},
		{
			name: "kustomize: configMapGenerator file outside",
			setup: func(t *testing.T, root, outside string) {
				writeFiles(t, root, map[string]string{
					"apps/kustomization.yaml": "configMapGenerator:\n- name: leak\n  files: [../../outside/secret.yaml]\n",
				})
			},
			path: "apps",
			want: `"../outside/secret.yaml"`,
		},
		{
			name: "kustomize: the kustomization file is a symlink outside",
			setup: func(t *testing.T, root, outside string) {
				symlink(t, root, filepath.Join(outside, "kustomization.yaml"), "apps/kustomization.yaml")
			},
			path: "apps",
			want: `"apps/kustomization.yaml"`,
		},
		{
			name: "kustomize: a Kustomization file (no extension) symlinked outside",
			setup: func(t *testing.T, root, outside string) {
				writeFiles(t, root, map[string]string{"apps/cm.yaml": configMapYAML})
				symlink(t, root, filepath.Join(outside, "kustomization.yaml"), "apps/Kustomization")
			},
			path: "apps",
			want: `"apps/Kustomization"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root, outside := checkoutAndOutside(t)
			tt.setup(t, root, outside)
			objs, err := Build(root, tt.path)
			g.Expect(objs).To(BeNil())
			g.Expect(err).To(MatchError(ErrOutsideCheckout))
			g.Expect(err.Error()).To(ContainSubstring("is outside the checkout"))
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
			g.Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
		})
	}
}

func TestBuildFollowsSymlinksInsideCheckout(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root string)
		path  string
		want  []string
	}{
		{
			name: "plain: file and directory symlinks",
			setup: func(t *testing.T, root string) {
				writeFiles(t, root, map[string]string{
					"shared/cm.yaml":     configMapYAML,
					"shared/sa/sa.yaml":  "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: robot}\n",
					"apps/own.yaml":      "apiVersion: v1\nkind: Secret\nmetadata: {name: own}\n",
					"apps/dangling.txt":  "",
					"shared/unused.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: unused}\n",
				})
				symlink(t, root, "../shared/cm.yaml", "apps/cm.yaml")
				symlink(t, root, filepath.Join(root, "shared", "sa"), "apps/accounts")
				symlink(t, root, "nowhere", "apps/notes.txt") // dangling, not a manifest: ignored
			},
			path: "apps",
			want: []string{"ServiceAccount/robot", "ConfigMap/inside", "Secret/own"},
		},
		{
			name: "path argument is a symlink inside",
			setup: func(t *testing.T, root string) {
				writeFiles(t, root, map[string]string{"real/cm.yaml": configMapYAML})
				symlink(t, root, "real", "current")
			},
			path: "current",
			want: []string{"ConfigMap/inside"},
		},
		{
			name: "kustomize: resource, base and patch symlinks",
			setup: func(t *testing.T, root string) {
				writeFiles(t, root, map[string]string{
					"apps/kustomization.yaml":        "resources: [cm.yaml, base]\npatches:\n- path: patch.yaml\n",
					"shared/cm.yaml":                 configMapYAML,
					"shared/base/kustomization.yaml": "resources: [sa.yaml]\n",
					"shared/base/sa.yaml":            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: robot}\n",
					"shared/patch.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: inside}\ndata: {patched: \"yes\"}\n",
				})
				symlink(t, root, "../shared/cm.yaml", "apps/cm.yaml")
				symlink(t, root, "../shared/base", "apps/base")
				symlink(t, root, filepath.Join(root, "shared", "patch.yaml"), "apps/patch.yaml")
			},
			path: "apps",
			want: []string{"ServiceAccount/robot", "ConfigMap/inside"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root, _ := checkoutAndOutside(t)
			tt.setup(t, root)
			objs, err := Build(root, tt.path)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ids(objs)).To(Equal(tt.want))
		})
	}
}

func TestBuildPlainSymlinkCycle(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"apps/cm.yaml": configMapYAML})
	symlink(t, root, "..", "apps/loop")
	_, err := Build(root, "apps")
	g.Expect(err).To(MatchError(ContainSubstring("apps/loop/apps: symlink cycle")))
}

func TestBuildRefusesRemoteResources(t *testing.T) {
	const multibases = "https://github.com/kubernetes-sigs/kustomize//examples/multibases?ref=v1.0.6"
	tests := []struct {
		name  string
		files map[string]string
		url   string
	}{
		{
			name:  "https git base",
			files: map[string]string{"app/kustomization.yaml": "resources:\n- " + multibases + "\n"},
			url:   multibases,
		},
		{
			name:  "github.com shorthand",
			files: map[string]string{"app/kustomization.yaml": "resources:\n- github.com/x/y\n"},
			url:   "github.com/x/y",
		},
		{
			name:  "git:: prefix in deprecated bases",
			files: map[string]string{"app/kustomization.yaml": "bases:\n- git::https://example.com/org/repo.git//deploy\n"},
			url:   "git::https://example.com/org/repo.git//deploy",
		},
		{
			name:  "ssh component",
			files: map[string]string{"app/kustomization.yaml": "components:\n- ssh://git@example.com/org/repo.git\n"},
			url:   "ssh://git@example.com/org/repo.git",
		},
		{
			name:  "scp-like git url",
			files: map[string]string{"app/kustomization.yaml": "resources:\n- git@github.com:org/repo.git/deploy\n"},
			url:   "git@github.com:org/repo.git/deploy",
		},
		{
			name:  "http file resource",
			files: map[string]string{"app/kustomization.yaml": "resources:\n- http://example.com/deploy.yaml\n"},
			url:   "http://example.com/deploy.yaml",
		},
		{
			name: "remote in a local base",
			files: map[string]string{
				"app/kustomization.yaml":  "resources: [../base]\n",
				"base/kustomization.yaml": "resources:\n- github.com/x/y\n",
			},
			url: "github.com/x/y",
		},
		{
			name:  "remote patch",
			files: map[string]string{"app/kustomization.yaml": "patches:\n- path: https://example.com/patch.yaml\n"},
			url:   "https://example.com/patch.yaml",
		},
		{
			name:  "remote generator file",
			files: map[string]string{"app/kustomization.yaml": "configMapGenerator:\n- name: c\n  files:\n  - key=https://example.com/file.txt\n"},
			url:   "key=https://example.com/file.txt",
		},
		{
			name:  "remote openapi schema",
			files: map[string]string{"app/kustomization.yaml": "openapi:\n  path: https://example.com/schema.json\n"},
			url:   "https://example.com/schema.json",
		},
		{
			name: "remote path in an inline builtin transformer",
			files: map[string]string{"app/kustomization.yaml": `transformers:
- |
  apiVersion: builtin
  kind: PatchTransformer
  metadata:
    name: p
  path: https://example.com/patch.yaml
`},
			url: "https://example.com/patch.yaml",
		},
		{
			name:  "remote transformer directory",
			files: map[string]string{"app/kustomization.yaml": "transformers:\n- https://github.com/org/transformers\n"},
			url:   "https://github.com/org/transformers",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeFiles(t, root, tt.files)
			start := time.Now()
			_, err := Build(root, "app")
			elapsed := time.Since(start)
			g.Expect(err).To(MatchError(ErrRemoteNotAllowed))
			g.Expect(err.Error()).To(ContainSubstring("remote resources are not allowed"))
			g.Expect(err.Error()).To(ContainSubstring(tt.url))
			g.Expect(elapsed).To(BeNumerically("<", 500*time.Millisecond), "refused before any network access")
		})
	}
}

func TestBuildAllowsURLsThatAreNotReferences(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"app/kustomization.yaml": `resources: [cm.yaml]
commonAnnotations:
  docs: https://example.com/docs
patches:
- patch: |-
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: inside
      annotations:
        source: https://github.com/org/repo
`,
		"app/cm.yaml": configMapYAML,
	})
	objs, err := Build(root, "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs[0].GetAnnotations()).To(Equal(map[string]string{
		"docs":   "https://example.com/docs",
		"source": "https://github.com/org/repo",
	}))
}

func TestBuildRefusesPlugins(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{
			name: "helmCharts",
			files: map[string]string{"app/kustomization.yaml": `helmCharts:
- name: podinfo
  repo: https://stefanprodan.github.io/podinfo
  version: 6.0.0
`},
			want: "app/kustomization.yaml: helmCharts: helm charts are not inflated",
		},
		{
			name: "helm generator config",
			files: map[string]string{
				"app/kustomization.yaml": "generators: [helm.yaml]\n",
				"app/helm.yaml":          "apiVersion: builtin\nkind: HelmChartInflationGenerator\nmetadata: {name: h}\nname: podinfo\n",
			},
			want: `app/helm.yaml HelmChartInflationGenerator "h": helm charts are not inflated`,
		},
		{
			name: "KRM function generator (container)",
			files: map[string]string{
				"app/kustomization.yaml": "generators: [gen.yaml]\n",
				"app/gen.yaml": `apiVersion: example.com/v1
kind: Generator
metadata:
  name: gen
  annotations:
    config.kubernetes.io/function: |
      container:
        image: example.com/generator:v1
`,
			},
			want: `app/gen.yaml Generator "gen": KRM functions do not run`,
		},
		{
			name: "KRM function transformer (exec)",
			files: map[string]string{
				"app/kustomization.yaml": `transformers:
- |
  apiVersion: example.com/v1
  kind: Shell
  metadata:
    name: sh
    annotations:
      config.kubernetes.io/function: |
        exec:
          path: /bin/sh
`,
			},
			want: `app/kustomization.yaml: transformers Shell "sh": KRM functions do not run`,
		},
		{
			name: "exec plugin by kind",
			files: map[string]string{
				"app/kustomization.yaml": "transformers: [plugin.yaml]\n",
				"app/plugin.yaml":        "apiVersion: someteam.example.com/v1\nkind: ChartRenderer\nmetadata: {name: r}\n",
			},
			want: `app/plugin.yaml ChartRenderer "r": only builtin generators and transformers run`,
		},
		{
			name: "plugin config in a transformer directory",
			files: map[string]string{
				"app/kustomization.yaml":     "transformers: [../plugins]\n",
				"plugins/kustomization.yaml": "resources: [p.yaml]\n",
				"plugins/p.yaml":             "apiVersion: someteam.example.com/v1\nkind: ChartRenderer\nmetadata: {name: r}\n",
			},
			want: `plugins/p.yaml ChartRenderer "r": only builtin generators and transformers run`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeFiles(t, root, tt.files)
			_, err := Build(root, "app")
			g.Expect(err).To(MatchError(ErrPluginsDisabled))
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
			g.Expect(err.Error()).To(ContainSubstring("kustomize plugins are disabled"))
		})
	}
}

func TestBuildBuiltinTransformerRuns(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"app/kustomization.yaml": "resources: [cm.yaml]\ntransformers: [prefix.yaml]\n",
		"app/cm.yaml":            configMapYAML,
		"app/prefix.yaml":        "apiVersion: builtin\nkind: PrefixTransformer\nmetadata: {name: p}\nprefix: team-\nfieldSpecs:\n- path: metadata/name\n",
	})
	objs, err := Build(root, "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ids(objs)).To(Equal([]string{"ConfigMap/team-inside"}))
}

// The pre-check is the first line; kustomize's own options are the second. Run
// krusty with them directly, without the pre-check, on what the pre-check refuses.
func TestKustomizeOptionsDisablePlugins(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{
			name: "exec plugin",
			files: map[string]string{
				"/app/kustomization.yaml": "transformers: [plugin.yaml]\n",
				"/app/plugin.yaml":        "apiVersion: someteam.example.com/v1\nkind: ChartRenderer\nmetadata: {name: r}\n",
			},
			want: "external plugins disabled",
		},
		{
			name: "KRM function",
			files: map[string]string{
				"/app/kustomization.yaml": "generators: [gen.yaml]\n",
				"/app/gen.yaml":           "apiVersion: example.com/v1\nkind: Generator\nmetadata:\n  name: gen\n  annotations:\n    config.kubernetes.io/function: |\n      container:\n        image: example.com/generator:v1\n",
			},
			want: "external plugins disabled",
		},
		{
			name: "helm",
			files: map[string]string{
				"/app/kustomization.yaml": "helmCharts:\n- name: podinfo\n  repo: https://stefanprodan.github.io/podinfo\n",
			},
			want: "enable-helm",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			fsys := filesys.MakeFsInMemory()
			for name, content := range tt.files {
				g.Expect(fsys.WriteFile(name, []byte(content))).To(Succeed())
			}
			_, err := krusty.MakeKustomizer(kustomizeOptions()).Run(fsys, "/app")
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
		})
	}
}

func TestIsRemote(t *testing.T) {
	tests := []struct {
		ref    string
		remote bool
	}{
		{"https://github.com/kubernetes-sigs/kustomize//examples/multibases?ref=v1.0.6", true},
		{"http://example.com/x.yaml", true},
		{"HTTPS://EXAMPLE.COM/x.yaml", true},
		{"github.com/x/y", true},
		{"GitHub.com/x/y", true},
		{"github.com:org/repo", true},
		{"git::https://example.com/org/repo", true},
		{"gh:org/repo", true},
		{"ssh://git@example.com/org/repo", true},
		{"file:///etc/repo", true},
		{"git@github.com:org/repo.git", true},
		{"deploy@example.com/org/repo", true},
		{"s3://bucket/key", true},
		{"base", false},
		{"../../base", false},
		{"./deployment.yaml", false},
		{"examples/github.com/x", false},
		{"user@local.yaml", false},
		{"key=value.txt", false},
		{"", false},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations: {a: https://x}\n", false},
	}
	for _, tt := range tests {
		if got := isRemote(tt.ref); got != tt.remote {
			t.Errorf("isRemote(%q) = %v, want %v", tt.ref, got, tt.remote)
		}
	}
}

func TestConfinedFSIsReadOnly(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	fsys, err := newConfinedFS(root)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fsys.WriteFile(filepath.Join(root, "x"), []byte("x"))).To(MatchError(errReadOnly))
	g.Expect(fsys.MkdirAll(filepath.Join(root, "d"))).To(MatchError(errReadOnly))
	g.Expect(fsys.RemoveAll(root)).To(MatchError(errReadOnly))
	_, err = fsys.Create("x")
	g.Expect(err).To(MatchError(errReadOnly))
	g.Expect(fsys.Exists("x")).To(BeFalse())

	_, err = fsys.ReadFile("../../etc/passwd")
	g.Expect(err).To(MatchError(ErrOutsideCheckout))
}
