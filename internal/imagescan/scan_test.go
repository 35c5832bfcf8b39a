package imagescan_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"testing"

	"github.com/gitsync-dev/gitsync/internal/egress"
	"github.com/gitsync-dev/gitsync/internal/imagescan"
	"github.com/gitsync-dev/gitsync/internal/testutil/imagereg"
)

func dockerConfig(host, user, pass string) []byte {
	b, _ := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{
		"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))}}})
	return b
}

func TestScanListsTagsWithCredentialsAndExclusions(t *testing.T) {
	reg := imagereg.New(t, "bot", "s3cret")
	reg.Push(t, "team/app", "1.0.0", "1.1.0", "sha256-abc.sig", "latest")
	s := imagescan.New(imagescan.Options{})
	req := imagescan.Request{Image: reg.Image("team/app"), Insecure: true, DockerConfigJSON: dockerConfig(reg.Host, "bot", "s3cret"),
		Exclusions: imagescan.DefaultExclusions}
	res, err := s.Scan(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(res.Tags)
	if fmt.Sprint(res.Tags) != "[1.0.0 1.1.0 latest]" {
		t.Fatalf("tags = %v, want the three without the signature", res.Tags)
	}
	if res.Canonical != reg.Image("team/app") {
		t.Fatalf("canonical = %q", res.Canonical)
	}

	req.DockerConfigJSON = dockerConfig(reg.Host, "bot", "wrong")
	if _, err := s.Scan(context.Background(), req); err == nil {
		t.Fatal("wrong credentials listed tags")
	}
	req.DockerConfigJSON = dockerConfig("other.example", "bot", "s3cret")
	if _, err := s.Scan(context.Background(), req); !errors.Is(err, imagescan.ErrNoCredentials) {
		t.Fatalf("credentials for another registry: err = %v, want ErrNoCredentials", err)
	}
}

func TestScanRefusesBadExclusionsAndDeniedAddresses(t *testing.T) {
	reg := imagereg.New(t, "", "")
	reg.Push(t, "app", "1")
	s := imagescan.New(imagescan.Options{})
	if _, err := s.Scan(context.Background(), imagescan.Request{Image: reg.Image("app"), Insecure: true, Exclusions: []string{"("}}); err == nil {
		t.Fatal("an exclusion that does not compile was accepted")
	}
	guarded := imagescan.New(imagescan.Options{Egress: egress.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})})
	_, err := guarded.Scan(context.Background(), imagescan.Request{Image: reg.Image("app"), Insecure: true})
	if !errors.Is(err, egress.ErrDenied) {
		t.Fatalf("scan of a loopback registry under the guard: err = %v, want ErrDenied", err)
	}
}

// TestScanTenThousandTags: the list is paginated, kept whole in the store, and the
// status summary stays ten tags.
func TestScanTenThousandTags(t *testing.T) {
	reg := imagereg.New(t, "", "")
	tags := make([]string, 10_000)
	for i := range tags {
		tags[i] = fmt.Sprintf("build-%05d", i)
	}
	reg.Push(t, "big", tags...)
	res, err := imagescan.New(imagescan.Options{}).Scan(context.Background(), imagescan.Request{Image: reg.Image("big"), Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tags) != 10_000 {
		t.Fatalf("listed %d tags, want 10000", len(res.Tags))
	}
	if pages := reg.TagPages.Load(); pages < 10 {
		t.Fatalf("the list came in %d pages, want it paginated (>= 10 pages of 1000)", pages)
	}
	store, err := imagescan.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Save("ns", "big", res.Tags); err != nil {
		t.Fatal(err)
	}
	back, err := store.Load("ns", "big")
	if err != nil || len(back) != 10_000 {
		t.Fatalf("stored list: %d tags, %v", len(back), err)
	}
	latest := imagescan.LatestTags(back, 10)
	if len(latest) != 10 || latest[0] != "build-09999" {
		t.Fatalf("latest = %v", latest)
	}
	if _, err := store.Load("ns", "other"); !errors.Is(err, imagescan.ErrNotScanned) {
		t.Fatalf("unscanned: err = %v", err)
	}

	small := imagescan.New(imagescan.Options{MaxTags: 5000})
	if _, err := small.Scan(context.Background(), imagescan.Request{Image: reg.Image("big"), Insecure: true}); !errors.Is(err, imagescan.ErrTooLarge) {
		t.Fatalf("10000 tags over a cap of 5000: err = %v, want ErrTooLarge", err)
	}
}

func TestDigest(t *testing.T) {
	reg := imagereg.New(t, "", "")
	want := reg.PushNew(t, "app", "v1")
	got, err := imagescan.New(imagescan.Options{}).Digest(context.Background(), imagescan.Request{Image: reg.Image("app"), Insecure: true}, "v1")
	if err != nil || got != want {
		t.Fatalf("digest = %q, %v; want %q", got, err, want)
	}
}
