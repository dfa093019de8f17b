// Package skewed is the program of the api builds the nemesis runs ahead
// of the machine's clock: internal/app's Main with a build's options and
// the process's clock shifted by a flag given before the command
// (skewedapi -clock-offset=2s serve). The server's clock is the
// machine's; a clock offset is wiring (app.ClockOffset), never a setting,
// so only the proof wing's builds take one.
package skewed

import (
	"flag"
	"os"

	"shelf/internal/app"
)

// Main runs the api (app.Main) with opts and the clock -clock-offset
// gives (default 0: the machine's). The command and its arguments follow
// the flag; Main hands them on to app.Main as its command line.
func Main(opts ...app.Option) {
	offset := flag.Duration("clock-offset", 0, "run the process's clock this far ahead of the machine's (negative: behind)")
	flag.Parse()
	os.Args = append(os.Args[:1], flag.Args()...)
	app.Main(append(opts, app.ClockOffset(*offset))...)
}
