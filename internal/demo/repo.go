package demo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// createRepo makes a Git repository with the demo app (and extra files) on branch main.
func createRepo(dir string, extra map[string]string) error {
	files := map[string]string{}
	for path, content := range extra {
		files[path] = content
	}
	for path, content := range appFiles {
		files[path] = content
	}
	for path, content := range chartFiles {
		files[path] = content
	}
	for path, content := range files {
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"config", "user.name", "gitsync demo"},
		{"config", "user.email", "demo@gitsync.invalid"},
		// image automation pushes to this repository's checked-out branch: the work tree follows.
		{"config", "receive.denyCurrentBranch", "updateInstead"},
		{"add", "-A"},
		{"commit", "-q", "-m", "demo app"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=true")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %w: %s", args, err, out)
		}
	}
	return nil
}
