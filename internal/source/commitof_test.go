package source

import "testing"

func TestCommitOf(t *testing.T) {
	const c = "3f1c0a9e7b2d4c6f8a1b3c5d7e9f0a2b4c6d8e0f"
	for in, want := range map[string]string{
		"main@sha1:" + c:   c,
		"v1.2.0@sha1:" + c: c,
		"sha1:" + c:        c,
		c:                  c,
		"main@sha1:3F1C0A9E7B2D4C6F8A1B3C5D7E9F0A2B4C6D8E0F": c,
		"main@sha1:3f1c":            "",
		"main@sha1:" + c[:39] + "z": "",
		"main":                      "",
		"":                          "",
	} {
		if got := CommitOf(in); got != want {
			t.Errorf("CommitOf(%q) = %q, want %q", in, got, want)
		}
	}
}
