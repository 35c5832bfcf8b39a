package demo

import (
	"bytes"
	"context"
	"strings"
	"sync"
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
	err := Run(ctx, Options{Dir: t.TempDir(), ExitWhenReady: true, Out: out, skipNameValidation: true})
	g := NewWithT(t)
	g.Expect(err).NotTo(HaveOccurred(), out.String())
	g.Expect(out.String()).To(MatchRegexp(`Application gitsync-demo/demo is Synced at main@sha1:[0-9a-f]{40}, health (Healthy|Progressing), 4 objects`))
	g.Expect(out.String()).To(MatchRegexp(`hook PreSync Job/db-migrate: Succeeded`))
	g.Expect(out.String()).To(MatchRegexp(`Application gitsync-demo/hello is Synced: chart hello 0.3.0, 2 objects`))
	g.Expect(out.String()).To(MatchRegexp(`Application gitsync-demo/hello-repo is Synced at hello@0.3.0 from HelmRepository charts, 2 objects`))
	g.Expect(out.String()).To(ContainSubstring("Application gitsync-demo/config is Synced: Secret db-credentials decrypted (SOPS, age key in Secret sops-age), ${CLUSTER_NAME} substituted, 2 objects"))
	g.Expect(out.String()).To(MatchRegexp(`image automation: tag 1\.1\.0 pushed to the local registry \S+ became commit [0-9a-f]{12} in Git, and Deployment gitsync-demo/web-auto now runs \S+/demo/web:1\.1\.0`))
	// Printed once the UI answers with the demo's Application.
	g.Expect(out.String()).To(MatchRegexp(`web UI \(read-only, as ServiceAccount gitsync-demo/ui-viewer\): http://127\.0\.0\.1:\d+/\?token=\S+`))
	g.Expect(out.String()).To(MatchRegexp(`notification received \(signature verified\): (GitRepository|Application)/gitsync-demo/demo`))
}

// cancelOn is the demo's output: it cancels when a line containing when is printed,
// as a user pressing Ctrl-C at that moment.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	when   string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if strings.Contains(c.buf.String(), c.when) {
		c.cancel()
	}
	return len(p), nil
}

func (c *cancelOn) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// Ctrl-C ends the demo without an error, whenever it comes: once the demo runs, or
// while it still waits for the first sync.
func TestDemoInterruptedEndsWithoutError(t *testing.T) {
	for _, when := range []string{"The demo runs until Ctrl-C", "created GitRepository"} {
		t.Run(when, func(t *testing.T) {
			g := NewWithT(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out := &cancelOn{when: when, cancel: cancel}
			done := make(chan error, 1)
			go func() { done <- Run(ctx, Options{Dir: t.TempDir(), Out: out, skipNameValidation: true}) }()
			select {
			case err := <-done:
				g.Expect(err).NotTo(HaveOccurred(), out.String())
				g.Expect(out.String()).To(ContainSubstring(when))
				g.Expect(out.String()).To(Or(ContainSubstring("stopping"), ContainSubstring("interrupted: stopped")))
			case <-time.After(3 * time.Minute):
				t.Fatalf("the demo did not stop: %s", out.String())
			}
		})
	}
}
