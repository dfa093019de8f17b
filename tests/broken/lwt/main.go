// Command lwt is the api deliberately broken: claims taken by check-then-act, no
// compare-and-set (broken.LWT).
// It takes the api's commands and settings (make test-nemesis-broken BROKEN=lwt).
package main

import (
	"shelf/internal/app"
	"shelf/tests/broken"
)

func main() { app.Main(app.WithStores(broken.LWT)) }
