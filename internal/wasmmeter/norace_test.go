//go:build !race

package wasmmeter

// raceCost scales what the tests wait for (race_test.go).
const raceCost = 1
