// Package health is the one judge of an object's and an Application's health: a typed
// status, one order, one judge per Application (its CEL spec.healthChecks, kstatus for
// every other kind) and one aggregate. apply, phase, tree and through them the
// controller, the CLI, the UI and the MCP server all ask it; nothing else imports
// kstatus or internal/celhealth (internal/layering checks it).
package health
