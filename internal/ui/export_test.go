package ui

// DisplayURL is displayURL, for the tests of package ui_test.
var DisplayURL = displayURL
