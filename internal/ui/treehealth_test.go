package ui_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/testutil/apps"
	"github.com/gitsync-dev/gitsync/internal/ui"
)

// The UI's tree judges an object as status.health does: by the Application's CEL check.
func TestTreeHealthFollowsCELHealthChecks(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	apps.CELGated(t, env.Client, ns)
	srv := startUI(t, env.Config, ui.Options{})
	g.Eventually(func(g Gomega) {
		resp, body := get(t, srv.URL+"/api/apps/"+ns+"/gated")
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
		var d ui.AppDetail
		g.Expect(json.Unmarshal([]byte(body), &d)).To(Succeed())
		n := findNode(d.Tree, "ConfigMap/"+ns+"/gate")
		g.Expect(n).NotTo(BeNil())
		g.Expect(n.Health).To(Equal(gitsyncv1.HealthStatusProgressing), "status.health says Progressing")
	}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
}
