// Package handlers is shelf's HTTP layer: chi routes, middleware, request
// and response DTOs, strict JSON decoding with validation, and the single
// place where errors become RFC 9457 problem+json answers. It depends on
// domain, never on repository; internal/app wires the two together.
package handlers
