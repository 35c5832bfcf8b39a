package operator

import "github.com/gitsync-dev/gitsync/internal/testutil/testenv"

// SharedEnv gives the external tests (package operator_test, which may use operatortest)
// this package's API server.
func SharedEnv() *testenv.Env { return env }
