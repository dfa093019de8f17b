// Package shelf holds what belongs to the whole service rather than one
// layer: the OpenAPI contract, embedded so the binary serves exactly the
// file in the repository.
package shelf

import _ "embed"

// OpenAPI is openapi.yaml, the contract of the HTTP API.
//
//go:embed openapi.yaml
var OpenAPI []byte
