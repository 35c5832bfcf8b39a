package operations_test

import (
	"os"
	"testing"

	"github.com/gitsync-dev/gitsync/internal/testutil/testenv"
)

var env *testenv.Env

// TestMain starts one API server; no controller runs, so a request stays pending and
// the tests read what a person's operation wrote.
func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, &env, nil))
}
