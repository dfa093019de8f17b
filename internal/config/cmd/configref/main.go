// Command configref writes the configuration reference, docs/configuration.md,
// from the settings table in internal/config (make generate runs it).
package main

import (
	"fmt"
	"os"

	"shelf/internal/config"
)

func main() {
	path := config.ReferencePath
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	if err := os.WriteFile(path, config.Reference(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "configref:", err)
		os.Exit(1)
	}
}
