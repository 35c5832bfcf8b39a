// Package integration tests the controllers as the operator composes them: one real API
// server (envtest), one manager running the source, Application, drift and notification
// controllers, and a real Git server, chart repository and notification receivers.
package integration
