package redact

import "testing"

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:s3cret@git.example.com/org/repo.git": "https://git.example.com/org/repo.git",
		"https://ghp_token123@github.com/org/repo":         "https://github.com/org/repo",
		"http://a:b@127.0.0.1:8080/x":                      "http://127.0.0.1:8080/x",
		"oci://robot:pw@registry.example.com/charts":       "oci://registry.example.com/charts",
		"ssh://git@github.com/org/repo":                    "ssh://git@github.com/org/repo",
		"ssh://git:pw@github.com/org/repo":                 "ssh://git@github.com/org/repo",
		"git@github.com:org/repo.git":                      "git@github.com:org/repo.git",
		"https://github.com/org/repo@v1":                   "https://github.com/org/repo@v1",
		"https://example.com/a@b/c":                        "https://example.com/a@b/c",
		"not a url":                                        "not a url",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValues(t *testing.T) {
	got := Values("pattern 'S3cr3t!' and 'S3cr3t!-long' failed", "S3cr3t!", "S3cr3t!-long", "")
	if want := "pattern '***' and '***' failed"; got != want {
		t.Fatalf("Values = %q, want %q", got, want)
	}
}
