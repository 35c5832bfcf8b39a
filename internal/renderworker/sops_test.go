package renderworker

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	gitsyncv1 "github.com/gitsync-dev/gitsync/api/v1beta1"
	"github.com/gitsync-dev/gitsync/internal/decrypt"
	"github.com/gitsync-dev/gitsync/internal/render"
	"github.com/gitsync-dev/gitsync/internal/testutil/sopsenc"
)

const sopsSecret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: hunter2-in-the-worker\n"

// sopsKeys is an age key and a render.Cluster whose decryption Secret holds it (the
// parent's side: the worker never sees the key).
func sopsKeys(t *testing.T) (string, *render.Cluster) {
	t.Helper()
	recipient, key, err := sopsenc.AgeKey()
	if err != nil {
		t.Fatal(err)
	}
	return recipient, &render.Cluster{Keys: func(context.Context, string) (decrypt.KeySource, error) {
		return decrypt.NewKeys(map[string][]byte{"test.agekey": key})
	}}
}

func encrypted(t *testing.T, name, plain, recipient string) string {
	t.Helper()
	out, err := sopsenc.Encrypt(name, []byte(plain), sopsenc.Options{Age: []string{recipient}})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func decrypting(a *gitsyncv1.Application) {
	a.Spec.Decryption = &gitsyncv1.Decryption{Provider: "sops", SecretRef: gitsyncv1.LocalObjectReference{Name: "sops-keys"}}
}

// A SOPS document decrypts in the worker with the parent's keys (the worker sends the
// encrypted data key, the parent answers with the data key) as it does in process, and
// the decrypted values come back to be masked.
func TestSOPSDecryptsInWorker(t *testing.T) {
	g := NewWithT(t)
	recipient, cluster := sopsKeys(t)
	dir := writeTree(t, map[string]string{"secret.yaml": encrypted(t, "secret.yaml", sopsSecret, recipient)})
	a := app("tenant", decrypting)
	p := newPool(t, Options{Workers: 1})
	want, err := render.Render(context.Background(), a, render.Source{Root: dir, Path: "./"}, cluster)
	g.Expect(err).NotTo(HaveOccurred())
	got, err := p.Render(context.Background(), a, render.Source{Root: dir, Path: "./"}, cluster)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(jsonOf(got.Objects)).To(Equal(jsonOf(want.Objects)))
	g.Expect(jsonOf(got.Objects)).To(ContainSubstring("hunter2-in-the-worker"))
	g.Expect(got.Sensitive).To(Equal(want.Sensitive))

	// Keys that do not fit fail as in process, naming the keys, not a value.
	_, other := sopsKeys(t)
	_, err = p.Render(context.Background(), a, render.Source{Root: dir, Path: "./"}, other)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
	_, inProcess := render.Render(context.Background(), a, render.Source{Root: dir, Path: "./"}, other)
	g.Expect(err.Error()).To(Equal(inProcess.Error()))
}

// A SOPS file that decrypts to more than the output bound fails its render alone. (An
// encrypted alias bomb cannot be made: SOPS expands aliases as it encrypts; the SOPS
// reader's own alias budget is tested in internal/sopsfile.)
func TestSOPSBombsFailTheirRenderAlone(t *testing.T) {
	recipient, cluster := sopsKeys(t)
	p := newPool(t, Options{Workers: 1, Bounds: Bounds{Memory: 400 << 20}, Timeout: 30 * time.Second,
		CPU: 2 * time.Second, MaxOutput: 2 << 20})
	good := writeTree(t, map[string]string{"cm.yaml": configMap("fine", "yes")})
	cases := []struct {
		name, plain, bound string
	}{
		{"output", manyConfigMaps(2200, 1024), render.BoundOutput}, // 6 MiB encrypted: under the 8 MiB a file may have
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := writeTree(t, map[string]string{"all.yaml": encrypted(t, "all.yaml", tc.plain, recipient)})
			_, err := p.Render(context.Background(), app("tenant", decrypting), render.Source{Root: dir, Path: "./"}, cluster)
			g.Expect(err).To(HaveOccurred())
			t.Logf("%s: %v", tc.name, err)
			if tc.bound != "" {
				g.Expect(render.IsLimit(err)).To(BeTrue(), "%v", err)
				g.Expect(err.Error()).To(ContainSubstring(tc.bound))
			}
			g.Expect(strings.Count(err.Error(), "x")).To(BeNumerically("<", 1000), "the error quotes no plaintext")
			res, err := p.Render(context.Background(), app("other"), render.Source{Root: good, Path: "./"}, nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Objects).To(HaveLen(1))
		})
	}
}
