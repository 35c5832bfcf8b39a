package bundle

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/gitsync-dev/gitsync/config"
)

// The committed bundle/ is what `make bundle` generates from config/ now, at the version
// and image it names: the test fails when config/ (CRDs, RBAC, the Deployment) changed
// without the bundle being regenerated.
func TestBundleIsCurrent(t *testing.T) {
	g := NewWithT(t)
	dir := filepath.Join("..", "..", "bundle")
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(CSVFile)))
	g.Expect(err).NotTo(HaveOccurred(), "run make bundle")
	committed := &CSV{}
	g.Expect(yaml.Unmarshal(data, committed)).To(Succeed())
	image := committed.Annotations["containerImage"]
	g.Expect(committed.Name).To(Equal(Package + ".v" + committed.Spec.Version))

	want, err := Generate(committed.Spec.Version, image)
	g.Expect(err).NotTo(HaveOccurred())
	got := map[string][]byte{}
	g.Expect(filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		got[filepath.ToSlash(rel)], err = os.ReadFile(p)
		return err
	})).To(Succeed())
	for name := range want {
		g.Expect(got).To(HaveKey(name), "bundle/%s is missing: run make bundle", name)
		g.Expect(bytes.Equal(got[name], want[name])).To(BeTrue(), "bundle/%s is stale: run make bundle", name)
	}
	for name := range got {
		g.Expect(want).To(HaveKey(name), "bundle/%s is not generated any more: run make bundle", name)
	}

	// What it holds: every CRD of config/, the manager at the CSV's image.
	crds, err := config.CRDs()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(committed.Spec.CustomResourceDefinitions.Owned).To(HaveLen(len(crds)))
	for _, crd := range crds {
		g.Expect(want).To(HaveKey("manifests/" + crd.Name + ".crd.yaml"))
	}
	deployments := committed.Spec.Install.Spec.DeploymentSpecs
	g.Expect(deployments).To(HaveLen(1))
	g.Expect(deployments[0].Spec.Template.Spec.Containers[0].Image).To(Equal(image))
	g.Expect(committed.Spec.Install.Spec.ClusterPermissions).NotTo(BeEmpty())
	g.Expect(committed.Spec.Install.Spec.ClusterPermissions[0].ServiceAccountName).To(Equal(deployments[0].Spec.Template.Spec.ServiceAccountName))

	// The kinds served in two versions convert without a webhook (strategy None): OLM is
	// asked for no webhook and no certificate, the manager serves no conversion port.
	g.Expect(string(data)).NotTo(ContainSubstring("webhookdefinitions"))
	g.Expect(string(data)).NotTo(ContainSubstring("conversion"))
	g.Expect(deployments[0].Spec.Template.Spec.Containers[0].Ports).NotTo(ContainElement(HaveField("ContainerPort", BeNumerically("==", 9443))))
	for _, crd := range crds {
		g.Expect(string(want["manifests/"+crd.Name+".crd.yaml"])).NotTo(ContainSubstring("conversion"), crd.Name)
	}
}

// A change in config/ makes the comparison fail: a different image is a different CSV.
func TestGenerateFollowsInputs(t *testing.T) {
	g := NewWithT(t)
	a, err := Generate("0.1.0", "img:a")
	g.Expect(err).NotTo(HaveOccurred())
	b, err := Generate("0.2.0", "img:b")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(b[CSVFile])).To(ContainSubstring("name: gitsync.v0.2.0"))
	g.Expect(strings.Count(string(b[CSVFile]), "img:b")).To(Equal(2))
	g.Expect(bytes.Equal(a[CSVFile], b[CSVFile])).To(BeFalse())
	g.Expect(a["manifests/applications.gitsync.dev.crd.yaml"]).To(Equal(b["manifests/applications.gitsync.dev.crd.yaml"]))
}

// The committed bundle is the latest release's (hack/releases), at the image that
// `gitsync install` defaults to: `make bundle` takes its version from hack/releases.
func TestBundleIsTheLatestRelease(t *testing.T) {
	g := NewWithT(t)
	releases, err := os.ReadFile(filepath.Join("..", "..", "hack", "releases"))
	g.Expect(err).NotTo(HaveOccurred())
	latest, err := config.LatestRelease(releases)
	g.Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(filepath.Join("..", "..", "bundle", filepath.FromSlash(CSVFile)))
	g.Expect(err).NotTo(HaveOccurred())
	csv := &CSV{}
	g.Expect(yaml.Unmarshal(data, csv)).To(Succeed())
	g.Expect("v" + csv.Spec.Version).To(Equal(latest))
	image, err := config.Image()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(csv.Annotations["containerImage"]).To(Equal(image))
}

// The CSV's alm-examples (config/samples) show every owned kind, in the stored version.
func TestCSVExamplesCoverEveryKindInV1beta1(t *testing.T) {
	g := NewWithT(t)
	files, err := Generate("0.1.0", "img:a")
	g.Expect(err).NotTo(HaveOccurred())
	csv := &CSV{}
	g.Expect(yaml.Unmarshal(files[CSVFile], csv)).To(Succeed())
	var examples []struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	g.Expect(json.Unmarshal([]byte(csv.Annotations["alm-examples"]), &examples)).To(Succeed())
	kinds := map[string]bool{}
	for _, e := range examples {
		g.Expect(e.APIVersion).To(Equal("gitsync.dev/v1beta1"), e.Kind)
		kinds[e.Kind] = true
	}
	for _, owned := range csv.Spec.CustomResourceDefinitions.Owned {
		g.Expect(owned.Version).To(Equal("v1beta1"), owned.Name)
		g.Expect(kinds).To(HaveKey(owned.Kind), "no example of %s", owned.Kind)
	}
}
