// Package forge is the one REST client of GitHub, GitLab and Gitea: commit statuses,
// pull-request comments (found again by a hidden marker) and open pull requests.
package forge
