package config_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gitsync-dev/gitsync/config"
)

// Without a version stamped at build time, gitsync installs the latest release's image:
// config/manager names the release on the last line of hack/releases (add a release,
// then bump the image there and run make bundle chart).
func TestDefaultImageIsTheLatestRelease(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile(filepath.Join("..", "hack", "releases"))
	g.Expect(err).NotTo(HaveOccurred())
	latest, err := config.LatestRelease(data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(latest).To(MatchRegexp(`^v\d+\.\d+\.\d+`))

	image, err := config.Image()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(image).To(Equal(config.ImageRepository + ":" + latest))
	g.Expect(config.ImageTag(image)).To(Equal(latest))

	objs, err := config.Install()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(managerImages(objs)).To(Equal([]string{image}))
}

// A build stamped with -X config.Version installs its own version's image.
func TestStampedVersionSetsTheImage(t *testing.T) {
	g := NewWithT(t)
	defer func(v string) { config.Version = v }(config.Version)
	config.Version = "v7.8.9"
	image, err := config.Image()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(image).To(Equal("ghcr.io/gitsync-dev/gitsync:v7.8.9"))
	objs, err := config.Install()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(managerImages(objs)).To(Equal([]string{image}))
}

func TestLatestRelease(t *testing.T) {
	g := NewWithT(t)
	v, err := config.LatestRelease([]byte("# header\nv0.1.0 abc\n\nv0.2.0 def\n# v9.0.0 not yet\n"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v).To(Equal("v0.2.0"))
	_, err = config.LatestRelease([]byte("# nothing released\n"))
	g.Expect(err).To(HaveOccurred())
	g.Expect(config.ImageTag("reg:5000/a/b:v1")).To(Equal("v1"))
	g.Expect(config.ImageTag("reg:5000/a/b")).To(Equal(""))
	g.Expect(config.ImageTag("a/b@sha256:00")).To(Equal(""))
}

func managerImages(objs []*unstructured.Unstructured) []string {
	var images []string
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			if m := c.(map[string]any); m["name"] == config.ManagerContainer {
				images = append(images, m["image"].(string))
			}
		}
	}
	return images
}
