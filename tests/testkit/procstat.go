package testkit

import (
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc's CPU times (USER_HZ: 100 a second on
// Linux).
const clockTick = 10 * time.Millisecond

// ParseStat reads a process's or thread's name and CPU time so far (user
// and system) from its /proc stat line: "pid (name) state ppid ...". The
// name may hold spaces and parentheses, so the fields are counted from the
// last ')': utime and stime are the 14th and 15th of the whole line.
func ParseStat(line string) (name string, cpu time.Duration, ok bool) {
	open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	f := strings.Fields(line[end+1:])
	if len(f) < 13 {
		return "", 0, false
	}
	user, err1 := strconv.ParseInt(f[11], 10, 64)
	sys, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return "", 0, false
	}
	return line[open+1 : end], time.Duration(user+sys) * clockTick, true
}
