package verify_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gitsync-dev/gitsync/internal/testutil/chartserver"
	"github.com/gitsync-dev/gitsync/internal/testutil/signing"
	"github.com/gitsync-dev/gitsync/internal/verify"
)

func TestProvenance(t *testing.T) {
	key := signing.OpenPGP(t, "Charts", "charts@example.com")
	other := signing.OpenPGP(t, "Mallory", "mallory@example.com")
	files := chartserver.ConfigMapChart("demo", "1.0.0")
	archive := chartserver.Package(t, "demo", files)
	prov := signing.Provenance(t, key, archive, "demo-1.0.0.tgz", files["Chart.yaml"])
	ring, err := verify.ParseKeyring(map[string][]byte{"keyring.asc": append(append([]byte{}, other.Public...), key.Public...)})
	if err != nil {
		t.Fatal(err)
	}

	s, err := verify.Provenance(archive, "charts/demo-1.0.0.tgz", prov, ring)
	if err != nil {
		t.Fatalf("signed chart: %v", err)
	}
	if want := (verify.Signer{Scheme: "helm", Fingerprint: key.Fingerprint, Identity: "Charts <charts@example.com>"}); s != want {
		t.Errorf("signer = %+v, want %+v", s, want)
	}

	tampered := chartserver.Package(t, "demo", map[string]string{
		"Chart.yaml": files["Chart.yaml"], "values.yaml": "greeting: evil\n", "templates/cm.yaml": files["templates/cm.yaml"]})
	onlyOther, err := verify.ParseKeyring(map[string][]byte{"k": other.Public})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name          string
		archive, prov []byte
		filename      string
		keys          bool // the right keyring
		want          string
	}{
		{"tampered archive", tampered, prov, "demo-1.0.0.tgz", true, "sha256 sum does not match"},
		{"another key", archive, prov, "demo-1.0.0.tgz", false, "demo-1.0.0.tgz"},
		{"no provenance", archive, nil, "demo-1.0.0.tgz", true, "has no provenance file"},
		{"other file name", archive, prov, "demo-2.0.0.tgz", true, "does not contain a SHA"},
		{"not clear-signed", archive, []byte("files:\n  demo-1.0.0.tgz: sha256:00\n"), "demo-1.0.0.tgz", true, "signature block not found"},
	}
	for _, tc := range cases {
		r := onlyOther
		if tc.keys {
			r = ring
		}
		_, err := verify.Provenance(tc.archive, tc.filename, tc.prov, r)
		if !errors.Is(err, verify.ErrUnverified) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrUnverified saying %q", tc.name, err, tc.want)
		}
	}
}
