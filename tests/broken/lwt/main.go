// Command lwt is the api deliberately broken: claims taken by check-then-act, no
// compare-and-set (broken.LWT).
// It takes the api's commands and settings (make test-nemesis-broken BROKEN=lwt),
// and -clock-offset before them: the nemesis runs one of its processes ahead (tests/internal/skewed).
package main

import (
	"shelf/internal/app"
	"shelf/tests/broken"
	"shelf/tests/internal/skewed"
)

func main() { skewed.Main(app.WithStores(broken.LWT)) }
