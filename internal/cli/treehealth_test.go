package cli

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/testutil/apps"
)

// `gitsync tree` judges an object as status.health does: by the Application's CEL check
// (kstatus alone would call this ConfigMap Healthy).
func TestTreeHealthFollowsCELHealthChecks(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	app := apps.CELGated(t, env.Client, ns)

	r := gitsync(t, "tree", "app", "gated", "-n", ns, "-o", "json")
	g.Expect(r.code).To(Equal(0), r.String())
	var out struct {
		Objects []node `json:"objects"`
	}
	g.Expect(json.Unmarshal([]byte(r.out), &out)).To(Succeed())
	g.Expect(out.Objects).To(HaveLen(1))
	g.Expect(out.Objects[0].Health).To(Equal(app.Status.Health.Status))
	r = gitsync(t, "tree", "app", "gated", "-n", ns)
	g.Expect(r.out).To(ContainSubstring("ConfigMap/" + ns + "/gate (Progressing)"))
}
