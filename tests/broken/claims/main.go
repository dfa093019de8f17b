// Command claims is the api deliberately broken: claims released when an activation's outcome
// is unknown (broken.Claims).
// It takes the api's commands and settings (make test-nemesis-broken BROKEN=claims).
package main

import (
	"shelf/internal/app"
	"shelf/tests/broken"
)

func main() { app.Main(app.WithStores(broken.Claims)) }
