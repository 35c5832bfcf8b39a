package ui

// DisplayURL is displayURL, for the tests of package ui_test.
var DisplayURL = displayURL

// HostAllowed is hostAllowed, for the tests of package ui_test.
var HostAllowed = hostAllowed

// Patterns are the routes s serves ("GET /api/apps", …).
func (s *Server) Patterns() []string { return s.patterns }
