package demo

import (
	"bytes"
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// The README's first command: a local API server, a local Git repository and a Synced
// Application of its kustomize overlay, then a clean exit.
func TestDemoBecomesReady(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out := &bytes.Buffer{}
	err := Run(ctx, Options{Dir: t.TempDir(), ExitWhenReady: true, Out: out})
	g := NewWithT(t)
	g.Expect(err).NotTo(HaveOccurred(), out.String())
	g.Expect(out.String()).To(MatchRegexp(`Application gitsync-demo/demo is Synced at main@sha1:[0-9a-f]{40}, health (Healthy|Progressing), 4 objects`))
	// Printed once the UI answers with the demo's Application.
	g.Expect(out.String()).To(MatchRegexp(`web UI \(read-only\): http://127\.0\.0\.1:\d+/`))
}
