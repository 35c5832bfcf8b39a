package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// gitsync logs app NAME prints the operator's lines about that Application only, readable.
func TestLogsOfOneApplication(t *testing.T) {
	g := NewWithT(t)
	log := strings.Join([]string{
		`{"level":"info","ts":"2026-11-24T18:51:17Z","msg":"Starting workers","controller":"application","worker count":4}`,
		`{"level":"info","ts":"2026-11-24T18:51:17Z","msg":"synced","controller":"application","controllerGroup":"gitsync.dev","controllerKind":"Application","Application":{"name":"web","namespace":"team-a"},"namespace":"team-a","name":"web","reconcileID":"4233","revision":"main@sha1:f312","created":1,"duration":"29ms"}`,
		`{"level":"info","ts":"2026-11-24T18:51:18Z","msg":"synced","controller":"application","Application":{"name":"web","namespace":"team-b"},"revision":"main@sha1:aaaa"}`,
		`{"level":"info","ts":"2026-11-24T18:51:19Z","msg":"synced","controller":"application","Application":{"name":"api","namespace":"team-a"},"revision":"main@sha1:bbbb"}`,
		`{"level":"info","ts":"2026-11-24T18:51:20Z","msg":"drift corrected","controller":"drift","Application":{"name":"web","namespace":"team-a"},"object":"ConfigMap/team-a/web","fields":[".data.color"],"writers":["kubectl-edit"]}`,
		`not json`,
	}, "\n")
	file := filepath.Join(t.TempDir(), "gitsync.log")
	g.Expect(os.WriteFile(file, []byte(log), 0o644)).To(Succeed())
	var out, errOut syncBuffer
	root := NewRootCommand(Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, testTools)
	code := Execute(context.Background(), root, []string{"logs", "app", "web", "-n", "team-a", "--file", file, "--kubeconfig", filepath.Join(t.TempDir(), "none")})
	g.Expect(code).To(Equal(0), errOut.String())
	g.Expect(out.String()).To(Equal(
		"2026-11-24T18:51:17Z info  synced created=1 duration=29ms revision=main@sha1:f312\n" +
			"2026-11-24T18:51:20Z info  drift corrected fields=[\".data.color\"] object=ConfigMap/team-a/web writers=[\"kubectl-edit\"]\n"))

	// Without --file, in a cluster without a manager Pod: a clear error.
	var out2, errOut2 syncBuffer
	root = NewRootCommand(Streams{In: strings.NewReader(""), Out: &out2, ErrOut: &errOut2}, testTools)
	code = Execute(context.Background(), root, []string{"logs", "app", "web", "-n", "team-a", "--kubeconfig", kubeconfigPath})
	g.Expect(code).NotTo(Equal(0))
	g.Expect(errOut2.String()).To(ContainSubstring("no gitsync manager Pod"))
}
