// Package shelfclient is the Go SDK of the shelf API, generated from
// openapi.yaml by oapi-codegen (`make generate`; a test fails when it is
// stale). Start with NewClientWithResponses(baseURL, WithRequestEditorFn(...))
// and add the bearer token with a request editor.
package shelfclient

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config oapi-codegen.yaml ../../openapi.yaml
