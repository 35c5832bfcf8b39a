package cli

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// The credential flags become a source.Auth checked as a GitRepository's Secret is;
// the password and token may come from the environment instead of the command line.
func TestBootstrapAuthFlags(t *testing.T) {
	g := NewWithT(t)
	t.Setenv(passwordEnv, "")
	t.Setenv(tokenEnv, "")

	a, err := (&gitAuthFlags{}).auth()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a).To(BeNil(), "no flag: anonymous")

	_, err = (&gitAuthFlags{username: "bot"}).auth()
	g.Expect(err).To(MatchError(ContainSubstring(`"username" but no "password"`)))

	t.Setenv(passwordEnv, "from-env")
	a, err = (&gitAuthFlags{username: "bot"}).auth()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Password).To(Equal("from-env"))

	t.Setenv(passwordEnv, "")
	t.Setenv(tokenEnv, "tok")
	a, err = (&gitAuthFlags{}).auth()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.BearerToken).To(Equal("tok"))
	_, err = (&gitAuthFlags{username: "bot", password: "pw"}).auth()
	g.Expect(err).To(MatchError(ContainSubstring("use one")))

	t.Setenv(tokenEnv, "")
	key := filepath.Join(t.TempDir(), "id")
	g.Expect(os.WriteFile(key, []byte("not a key"), 0o600)).To(Succeed())
	_, err = (&gitAuthFlags{privateKeyFile: key}).auth()
	g.Expect(err).To(MatchError(ContainSubstring(`"identity" but no "known_hosts"`)))
	_, err = (&gitAuthFlags{caFile: filepath.Join(t.TempDir(), "missing")}).auth()
	g.Expect(err).To(MatchError(ContainSubstring("reading")))

	r := gitsync(t, "bootstrap", "git", "--url", "https://bot:hunter2@git.example/fleet.git", "--path", "clusters/a")
	g.Expect(r.code).To(Equal(1), r.String())
	g.Expect(r.err).To(ContainSubstring("holds a password"))
	g.Expect(r.err).NotTo(ContainSubstring("hunter2"))
}
