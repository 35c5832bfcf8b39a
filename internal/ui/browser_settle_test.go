package ui_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/testutil/browser"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

// headless runs Chromium as screenshot and link-preview tools do: --virtual-time-budget
// lets the page run for that much virtual time, which Chromium only advances while no
// network fetch is pending, and then it prints the DOM (or saves a screenshot) and exits.
// A page whose live stream counts as a pending fetch never gets there: the deadline
// fails the test, and the whole process group (Chromium's helpers too) is killed.
func headless(t *testing.T, page string, deadline time.Duration, args ...string) string {
	t.Helper()
	path := browser.Path()
	if path == "" {
		t.Skip("no chromium binary: install Debian's chromium (apt-get install -y chromium) to run browser tests")
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + t.TempDir(),
		"--virtual-time-budget=5000"}, args...)
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("chromium on %s did not finish within %s: the page never settled", page, deadline)
	}
	if err != nil {
		t.Fatalf("chromium on %s: %v", page, err)
	}
	return string(out)
}

// Headless Chromium with a virtual time budget settles on every page (the live stream
// does not keep it waiting), and what it prints is the rendered page with the stream
// connected: the budget ran with the stream open.
func TestBrowserPagesSettleUnderVirtualTime(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t)
	f.addChildren(t)
	srv := startUI(t, env.Config, ui.Options{})
	const deadline = 90 * time.Second

	for _, page := range []struct{ path, rendered string }{
		{"/", `data-name="web"`},
		{"/apps/" + f.ns + "/web", `data-id="Pod/` + f.ns + `/web-7d9f-abcde"`},
		{"/sources", `app-repo`},
	} {
		dom := headless(t, page.path, deadline, "--dump-dom", srv.LoginURL(page.path))
		g.Expect(dom).To(ContainSubstring(page.rendered), "page %s", page.path)
		g.Expect(dom).To(ContainSubstring(`<span id="live" class="live on"`), "page %s: the stream connected", page.path)
	}

	shot := filepath.Join(t.TempDir(), "app.png")
	headless(t, "/apps/"+f.ns+"/web", deadline, "--screenshot="+shot, "--window-size=1280,900", srv.LoginURL("/apps/"+f.ns+"/web"))
	info, err := os.Stat(shot)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Size()).To(BeNumerically(">", 0))
}

// The stream reader reconnects when its connection drops (a restarted server, a proxy's
// idle timeout), and the page goes on updating without a reload.
func TestBrowserLiveUpdatesSurviveADroppedStream(t *testing.T) {
	ctx := browser.New(t, 1280, 900)
	f := newFixture(t)
	srv := startUI(t, env.Config, ui.Options{})
	dep := `button.node[data-id="Deployment/` + f.ns + `/web"]`
	do(t, ctx, 20*time.Second, chromedp.Navigate(srv.LoginURL("/apps/"+f.ns+"/web")+"&view=list"),
		chromedp.WaitVisible(chromedp.CSS(dep)), chromedp.WaitVisible(chromedp.CSS("#live.on")))
	_ = eval[bool](t, ctx, `window.__notReloaded = true`)

	srv.CloseClientConnections()
	f.setImage(t, "nginx:9.9")
	do(t, ctx, 30*time.Second, chromedp.WaitVisible(chromedp.CSS(dep+" .badge.drifted")), chromedp.WaitVisible(chromedp.CSS("#live.on")))
	NewWithT(t).Expect(eval[bool](t, ctx, `window.__notReloaded === true`)).To(BeTrue(), "the page was reloaded")
}
