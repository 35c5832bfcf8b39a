package webhook

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestVerify(t *testing.T) {
	body := []byte(`{"ref":"refs/heads/main"}`)
	mac := hexMAC("s3cret", body)
	cases := []struct {
		name   string
		sig    signature
		secret string
		want   bool
	}{
		{"prefixed hmac", hmacSignature("sha256="+mac, true, body), "s3cret", true},
		{"upper-case hex", hmacSignature("sha256="+strings.ToUpper(mac), true, body), "s3cret", true},
		{"secret stored with a newline", hmacSignature("sha256="+mac, true, body), "s3cret\n", true},
		{"secret stored with CRLF", hmacSignature("sha256="+mac, true, body), "s3cret\r\n", true},
		{"other secret", hmacSignature("sha256="+mac, true, body), "s3cret2", false},
		{"leading space is part of the secret", hmacSignature("sha256="+mac, true, body), " s3cret", false},
		{"other body", hmacSignature("sha256="+mac, true, []byte(`{}`)), "s3cret", false},
		{"prefix required", hmacSignature(mac, true, body), "s3cret", false},
		{"bare hex allowed (gitea)", hmacSignature(mac, false, body), "s3cret", true},
		{"prefix tolerated (gitea)", hmacSignature("sha256="+mac, false, body), "s3cret", true},
		{"not hex", hmacSignature("sha256=xyz", true, body), "s3cret", false},
		{"truncated", hmacSignature("sha256="+mac[:62], true, body), "s3cret", false},
		{"empty secret verifies nothing", hmacSignature("sha256="+hexMAC("", body), true, body), "", false},
		{"newline-only secret verifies nothing", hmacSignature("sha256="+hexMAC("", body), true, body), "\n", false},
		{"token", tokenSignature("s3cret"), "s3cret", true},
		{"token, secret with newline", tokenSignature("s3cret"), "s3cret\n", true},
		{"token prefix", tokenSignature("s3c"), "s3cret", false},
		{"token longer", tokenSignature("s3cret!"), "s3cret", false},
		{"empty token, empty secret", tokenSignature(""), "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			NewWithT(t).Expect(c.sig.verify([]byte(c.secret))).To(Equal(c.want))
		})
	}
}

func TestDecide(t *testing.T) {
	g := NewWithT(t)
	body := []byte(`payload`)
	sig := hmacSignature("sha256="+hexMAC("a", body), true, body)
	const url = "https://github.com/acme/platform-config"
	repos := []Repository{
		{Namespace: "x", Name: "main", URL: url, Branch: "main", Secret: []byte("a")},
		{Namespace: "x", Name: "main", URL: url, Branch: "main", Secret: []byte("a")}, // listed twice
		{Namespace: "y", Name: "main", URL: url, Branch: "main", Secret: []byte("b")},
	}
	ev := push{urls: []string{url + ".git"}, refs: []string{"refs/heads/main"}}

	wake, ok := decide(repos, ev, sig, nil)
	g.Expect(ok).To(BeTrue())
	g.Expect(wake).To(HaveLen(1))
	g.Expect(wake[0].Namespace).To(Equal("x"))

	wake, ok = decide(repos, ev, sig, []byte("admin"))
	g.Expect(ok).To(BeTrue())
	g.Expect(wake).To(HaveLen(1))

	wake, ok = decide(repos, push{urls: []string{"https://github.com/acme/other"}, refs: ev.refs}, sig, nil)
	g.Expect(ok).To(BeFalse())
	g.Expect(wake).To(BeEmpty())

	wake, ok = decide(repos, push{urls: []string{"https://github.com/acme/other"}, refs: ev.refs}, sig, []byte("a"))
	g.Expect(ok).To(BeTrue())
	g.Expect(wake).To(BeEmpty())
}
