package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// `gitsync history -o json|yaml` prints status.history as data.
func TestHistoryOutputFormats(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	for _, format := range []string{"json", "yaml"} {
		r := gitsync(t, "history", "app", "web", "-n", f.ns, "-o", format)
		g.Expect(r.code).To(Equal(0), r.String())
		var out struct {
			Application string                       `json:"application"`
			History     []gitsyncv1.SyncHistoryEntry `json:"history"`
		}
		if format == "json" {
			g.Expect(json.Unmarshal([]byte(r.out), &out)).To(Succeed())
		} else {
			g.Expect(yaml.Unmarshal([]byte(r.out), &out)).To(Succeed())
		}
		g.Expect(out.Application).To(Equal(f.ns + "/web"))
		g.Expect(out.History).NotTo(BeEmpty())
		g.Expect(out.History[0].Revision).To(Equal("main@sha1:" + f.sha))
	}
	r := gitsync(t, "history", "app", "web", "-n", f.ns, "-o", "wide")
	g.Expect(r.code).NotTo(Equal(0), r.String())
	g.Expect(r.err).To(ContainSubstring("use table, json or yaml"))
}

// `gitsync diff --path` of a directory that renders nothing says what the sync would do
// with prune on: refuse, rather than prune everything (not "N pruned").
func TestDiffOfAnEmptyRender(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, nil)
	dir := t.TempDir()
	g.Expect(os.Mkdir(filepath.Join(dir, ".git"), 0o755)).To(Succeed())
	g.Expect(os.Mkdir(filepath.Join(dir, "app"), 0o755)).To(Succeed())
	r := gitsync(t, "diff", "app", "web", "-n", f.ns, "--path", filepath.Join(dir, "app"))
	g.Expect(r.code).To(Equal(2), r.String())
	g.Expect(r.err).To(ContainSubstring("set allowEmpty: true"))
	g.Expect(r.out).NotTo(ContainSubstring("pruned"))
}
