package helm

import (
	"sort"
	"strings"

	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/yaml"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
)

// documents splits a rendered template into its YAML documents as helm install does: a
// line that starts with "---" begins a new document even when text follows on that line
// (a chart whose whitespace chomping glues the separator to the next line, as in
// "---apiVersion: v1", installs with helm, so it syncs here too). Empty documents are
// left out.
func documents(rendered string) []string {
	split := releaseutil.SplitManifests(rendered)
	keys := make([]string, 0, len(split))
	for k := range split {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	docs := make([]string, 0, len(keys))
	for _, k := range keys {
		docs = append(docs, split[k])
	}
	return docs
}

// joinDocuments writes documents back as one YAML stream.
func joinDocuments(docs []string) []byte {
	var b strings.Builder
	for i, d := range docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		b.WriteString(d)
		if !strings.HasSuffix(d, "\n") {
			b.WriteString("\n")
		}
	}
	return []byte(b.String())
}

// firesOn tells whether a rendered document belongs to this release: helm install runs
// the pre-install and post-install hooks, helm upgrade the pre-upgrade and post-upgrade
// ones. gitsync maps both pairs to PreSync and PostSync, so a hook that lists only
// install events is left out of an upgrade (a database created once is not created at
// every sync) and one that lists only upgrade events is left out of the install.
// Everything else stays: objects, and hooks of other events (the sync skips those).
func firesOn(doc string, isUpgrade bool) bool {
	if !strings.Contains(doc, gitsyncv1.HelmHookAnnotation) {
		return true // most documents: no need to parse them here
	}
	var head struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
		return true // the decode of the sync reports it
	}
	hook, ok := head.Metadata.Annotations[gitsyncv1.HelmHookAnnotation]
	if !ok {
		return true
	}
	var install, upgrade bool
	for _, event := range strings.Split(hook, ",") {
		switch strings.TrimSpace(event) {
		case "pre-install", "post-install":
			install = true
		case "pre-upgrade", "post-upgrade":
			upgrade = true
		}
	}
	if !install && !upgrade {
		return true
	}
	return upgrade && isUpgrade || install && !isUpgrade
}
