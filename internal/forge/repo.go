package forge

import (
	"fmt"
	"net/url"
	"strings"
)

// Repo is a forge repository parsed from a Git URL.
type Repo struct {
	// Host is the forge's host name (with port, if any).
	Host string
	// Path is `owner/repo` (GitLab: `group/subgroup/project`), without `.git`.
	Path string
}

// Owner and Name split Path at its last slash.
func (r Repo) Owner() string { return r.Path[:max(strings.LastIndex(r.Path, "/"), 0)] }

// Name is the repository's name (the last path element).
func (r Repo) Name() string { return r.Path[strings.LastIndex(r.Path, "/")+1:] }

// ParseRepo reads host and `owner/repo` from an https, ssh or scp-like Git URL.
func ParseRepo(raw string) (Repo, error) {
	var host, path string
	if i := strings.Index(raw, "://"); i >= 0 {
		u, err := url.Parse(raw)
		if err != nil {
			return Repo{}, fmt.Errorf("parsing the repository URL: %w", err)
		}
		host, path = u.Host, u.Path
		if u.Scheme == "ssh" {
			host = u.Hostname()
		}
	} else if at, colon := strings.Index(raw, "@"), strings.Index(raw, ":"); at >= 0 && colon > at {
		host, path = raw[at+1:colon], raw[colon+1:]
	} else {
		return Repo{}, fmt.Errorf("repository URL is not https, ssh or scp-like")
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	if host == "" || !strings.Contains(path, "/") {
		return Repo{}, fmt.Errorf("repository URL has no owner/repository path")
	}
	return Repo{Host: host, Path: path}, nil
}
