// Command api is the shelf service: `api serve` runs the HTTP API, `api
// migrate` creates the keyspace and applies the schema, `api admin` runs
// the operator commands (`api help` lists them). Settings come from
// SHELF_* environment variables (see docs/configuration.md). The program
// is internal/app's Main, wired as the server is (no options).
package main

import "shelf/internal/app"

func main() { app.Main() }
