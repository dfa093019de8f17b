// Command claims is the api deliberately broken: claims released when an activation's outcome
// is unknown (broken.Claims).
// It takes the api's commands and settings (make test-nemesis-broken BROKEN=claims),
// and -clock-offset before them: the nemesis runs one of its processes ahead (tests/internal/skewed).
package main

import (
	"shelf/internal/app"
	"shelf/tests/broken"
	"shelf/tests/internal/skewed"
)

func main() { skewed.Main(app.WithStores(broken.Claims)) }
