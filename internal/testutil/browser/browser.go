// Package browser starts headless Chromium (Debian's chromium package) for UI tests.
package browser

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"
)

// Path returns the Chromium binary, or "" when none is installed.
func Path() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	return ""
}

// New starts a headless browser with a window of width × height for the test (stopped
// at its end) and returns the context of its first tab. Without Chromium the test is
// skipped with a message that says how to install it.
func New(tb testing.TB, width, height int) context.Context {
	tb.Helper()
	path := Path()
	if path == "" {
		tb.Skip("no chromium binary: install Debian's chromium (apt-get install -y chromium) to run browser tests")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.WindowSize(width, height),
		chromedp.UserDataDir(tb.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	tb.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// Start the browser now, so that a test's timings exclude its start-up.
	if err := chromedp.Do(ctx); err != nil {
		tb.Fatalf("starting chromium %s: %v", path, err)
	}
	return ctx
}
