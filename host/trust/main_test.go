package trust

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// The package starts no goroutines; the check keeps it so. A child
// started by TestUpdateAcrossProcesses does its work instead of testing.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperProcess())
	}
	goleak.VerifyTestMain(m)
}
