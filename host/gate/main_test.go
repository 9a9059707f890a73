package gate

import (
	"testing"

	"go.uber.org/goleak"
)

// The gate starts no goroutines; the check keeps it so.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
