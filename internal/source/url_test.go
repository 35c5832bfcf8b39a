package source

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		url      string
		protocol string
		host     string
		port     int
		user     string
		path     string
		wantErr  bool
	}{
		{url: "https://github.com/org/repo.git", protocol: "https", host: "github.com", path: "/org/repo.git"},
		{url: "http://127.0.0.1:8080/repo.git", protocol: "http", host: "127.0.0.1", port: 8080, path: "/repo.git"},
		{url: "ssh://git@host:2222/org/repo.git", protocol: "ssh", host: "host", port: 2222, user: "git", path: "/org/repo.git"},
		{url: "git@github.com:org/repo.git", protocol: "ssh", host: "github.com", port: 22, user: "git", path: "org/repo.git"},
		{url: "file:///srv/git/repo.git", protocol: "file", path: "/srv/git/repo.git"},
		{url: "http://[::1", wantErr: true},
		{url: "", wantErr: true},
		{url: "ftp://host/repo.git", wantErr: true},
		{url: "git://host/repo.git", wantErr: true},
		{url: "/srv/git/repo.git", wantErr: true},
		{url: "relative/path", wantErr: true},
		{url: "https:///repo.git", wantErr: true},
		{url: "https://host", wantErr: true},
		{url: "https://host/repo\n.git", wantErr: true},
		// Text that two parsers read differently, and credentials outside spec.secretRef.
		{url: "https://evil.example#@git.corp/a/app.git", wantErr: true},
		{url: "https://evil.example?@git.corp/a/app.git", wantErr: true},
		{url: "https://evil.example/x#@git.corp/a/app.git", wantErr: true},
		{url: "https://evil.example/%23@git.corp/a/app.git", wantErr: true},
		{url: "https://git.corp/a/app.git?ref=main", wantErr: true},
		{url: "https://user@git.corp/a/app.git", wantErr: true},
		{url: "https://user:pw@git.corp/a/app.git", wantErr: true},
		{url: "ssh://git:pw@git.corp/a/app.git", wantErr: true},
		{url: "git:pw@git.corp:a/app.git", wantErr: true},
		{url: "file://user@/srv/git/repo.git", wantErr: true},
		{url: "git@evil.example:x#@git.corp:a/app.git", wantErr: true},
		{url: "https://git.corp:443/a/app.git", protocol: "https", host: "git.corp", port: 443, path: "/a/app.git"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			g := NewWithT(t)
			ep, err := parseURL(tt.url)
			if tt.wantErr {
				g.Expect(errors.Is(err, ErrURLInvalid)).To(BeTrue(), "error: %v", err)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ep.Protocol).To(Equal(tt.protocol))
			g.Expect(ep.Host).To(Equal(tt.host))
			g.Expect(ep.Port).To(Equal(tt.port))
			g.Expect(ep.User).To(Equal(tt.user))
			g.Expect(ep.Path).To(Equal(tt.path))
		})
	}
}

func TestRedactURL(t *testing.T) {
	g := NewWithT(t)
	_, err := parseURL("ftp://user:pa55@host/x")
	g.Expect(err.Error()).NotTo(ContainSubstring("pa55"))
	_, err = parseURL("http://user:pa55@[::1")
	g.Expect(err.Error()).NotTo(ContainSubstring("pa55"))
}
