// Package notify routes gitsync's events to Providers (chat services, signed webhooks, forge commit statuses) and delivers them asynchronously.
package notify
