// Package appset turns an ApplicationSet's generators and template into Applications, and
// decides which of them a RollingSync rollout lets take a new revision now.
package appset
