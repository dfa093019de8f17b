// Command localserial is the api deliberately broken: compare-and-sets at LOCAL_SERIAL in every
// data centre (broken.LocalSerial).
// It takes the api's commands and settings (make test-regions BROKEN=local-serial).
package main

import (
	"shelf/internal/app"
	"shelf/tests/broken"
)

func main() { app.Main(app.WithSerialRule(broken.LocalSerial)) }
