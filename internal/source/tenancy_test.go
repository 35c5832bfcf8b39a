package source

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/gitsync-dev/gitsync/internal/testutil/gittest"
)

// A repository that names another repository's commit (a SHA seen in a status or an
// event) gets nothing from the other's checkout: it must fetch the commit from its own
// remote, which does not serve it.
func TestCheckoutsBelongToTheirRepository(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	private := gittest.NewServer(t, gittest.Options{Username: "team-a", Password: "s3cret-a"})
	sha := private.CreateRepo("private").Commit("main", "secret", map[string]string{"secret.yaml": "team-a's data"})
	public := gittest.NewServer(t, gittest.Options{})
	public.CreateRepo("public").Commit("main", "public", map[string]string{"public.yaml": "anyone's"})
	f := newTestFetcher(t)

	a, err := f.Fetch(ctx, Request{URL: private.HTTPURL("private"), Ref: Ref{Branch: "main"},
		Auth: &Auth{Username: "team-a", Password: "s3cret-a"}, Key: RepositoryKey(private.HTTPURL("private"), "team-a/creds")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Commit).To(Equal(sha))

	_, err = f.Fetch(ctx, Request{URL: public.HTTPURL("public"), Ref: Ref{Commit: sha},
		Key: RepositoryKey(public.HTTPURL("public"), "")})
	g.Expect(err).To(HaveOccurred(), "team-b read team-a's commit through a public repository")
	g.Expect(err).To(MatchError(ErrRefNotFound))
}
