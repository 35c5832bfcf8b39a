package ui

import "testing"

// `gitsync ui` listens on loopback unless --allow-remote says otherwise (moved with the
// command from internal/cli's TestUIRefusesANonLoopbackAddress).
func TestLoopbackAddress(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:9080": true, "127.1.2.3:9080": true, "[::1]:9080": true, "localhost:9080": true, "LocalHost:0": true,
		"0.0.0.0:9080": false, ":9080": false, "[::]:9080": false, "192.168.1.5:9080": false,
		"workstation.lan:9080": false, "127.0.0.1": false,
	} {
		if got := loopbackAddress(addr); got != want {
			t.Errorf("loopbackAddress(%q) = %v, want %v", addr, got, want)
		}
	}
}
