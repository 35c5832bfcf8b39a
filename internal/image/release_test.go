package image

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

type workflow struct {
	// "on" is YAML 1.1's true to some parsers: both keys are read.
	On   *trigger `json:"on"`
	True *trigger `json:"true"`
	Jobs map[string]struct {
		Needs       any               `json:"needs"`
		Permissions map[string]string `json:"permissions"`
		Uses        string            `json:"uses"`
		With        map[string]any    `json:"with"`
		Steps       []struct {
			Name string         `json:"name"`
			Uses string         `json:"uses"`
			Run  string         `json:"run"`
			With map[string]any `json:"with"`
		} `json:"steps"`
	} `json:"jobs"`
}

type trigger struct {
	Push struct {
		Tags []string `json:"tags"`
	} `json:"push"`
}

// The release workflow (run by a forge on a tag, not here) is valid YAML and does what it
// says: on v* tags it builds both architectures with hack/image, using only flags that
// program has, pushes, signs with cosign, attests an SBOM, and hands the digest to the
// SLSA provenance generator.
func TestReleaseWorkflow(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile(filepath.Join("..", "..", ".github", "workflows", "release.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	w := &workflow{}
	_, err = yaml.YAMLToJSONStrict(data) // no duplicate keys
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(yaml.Unmarshal(data, w)).To(Succeed())
	on := w.On
	if on == nil {
		on = w.True
	}
	g.Expect(on).NotTo(BeNil())
	g.Expect(on.Push.Tags).To(Equal([]string{"v*"}))

	g.Expect(w.Jobs).To(HaveKey("image"))
	img := w.Jobs["image"]
	g.Expect(img.Permissions).To(HaveKeyWithValue("id-token", "write"))
	var runs, uses []string
	for _, s := range img.Steps {
		runs = append(runs, s.Run)
		uses = append(uses, s.Uses)
	}
	all := strings.Join(runs, "\n")
	g.Expect(all).To(ContainSubstring("go run ./hack/image"))
	g.Expect(all).To(ContainSubstring("-platforms linux/amd64,linux/arm64"))
	g.Expect(all).To(MatchRegexp(`cosign sign --yes "\$IMAGE@`))
	g.Expect(all).To(ContainSubstring("cosign attest"))
	g.Expect(uses).To(ContainElement(HavePrefix("anchore/sbom-action@")))

	// Every flag the workflow passes to hack/image is one the program defines.
	main, err := os.ReadFile(filepath.Join("..", "..", "hack", "image", "main.go"))
	g.Expect(err).NotTo(HaveOccurred())
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`flag\.\w+\("([a-z-]+)"`).FindAllStringSubmatch(string(main), -1) {
		defined[m[1]] = true
	}
	call := all[strings.Index(all, "go run ./hack/image"):]
	call = call[:strings.Index(call, "\necho")]
	var used []string
	for _, f := range strings.Fields(call) {
		if name, ok := strings.CutPrefix(f, "-"); ok && regexp.MustCompile(`^[a-z][a-z-]*$`).MatchString(name) {
			used = append(used, name)
		}
	}
	g.Expect(used).To(ContainElements("platforms", "version", "push", "digest-file"))
	for _, name := range used {
		g.Expect(defined).To(HaveKey(name), "hack/image has no -%s flag", name)
	}
	g.Expect(defined).To(HaveKey("push"))

	g.Expect(w.Jobs).To(HaveKey("provenance"))
	prov := w.Jobs["provenance"]
	g.Expect(prov.Uses).To(HavePrefix("slsa-framework/slsa-github-generator/.github/workflows/generator_container_slsa3.yml@v"))
	g.Expect(prov.Needs).To(Equal("image"))
	g.Expect(prov.With).To(HaveKeyWithValue("digest", "${{ needs.image.outputs.digest }}"))
}
