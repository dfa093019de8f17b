// Package domain is shelf's business: its types, the services that keep the
// invariants of DESIGN.md, and the small store interfaces those services
// need. It imports only the standard library; handlers (HTTP) and repository
// (Cassandra) depend on it, never the other way round.
package domain
