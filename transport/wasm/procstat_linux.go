package wasm

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// procStat is the CPU time (user and system, all threads) and resident
// memory of process pid, from /proc/<pid>/stat.
func procStat(pid int) (cpu time.Duration, rss int64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command's name, in parentheses, may hold anything: the fields
	// are counted after its last ')', from the third (the state).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 22 {
		return 0, 0, false
	}
	num := func(j int) int64 {
		n, err := strconv.ParseInt(string(f[j]), 10, 64)
		if err != nil {
			ok = false
		}
		return n
	}
	ok = true
	utime, stime, pages := num(14-3), num(15-3), num(24-3)
	// Times are in clock ticks of USER_HZ, which Linux fixes at 100 for
	// what it reports to user space.
	return time.Duration(utime+stime) * (time.Second / 100), pages * int64(os.Getpagesize()), ok
}
