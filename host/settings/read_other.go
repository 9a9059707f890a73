//go:build !unix

package settings

// oNonblock is 0 where there are no FIFOs to block on.
const oNonblock = 0
