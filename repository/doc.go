// Package repository implements the domain's store interfaces on Apache
// Cassandra with gocqlx: connection set-up, schema migrations, and one file
// per table family with its CQL, its row structs and the conversions to
// domain types. Driver errors stop here (gocql.ErrNotFound becomes
// domain.ErrNotFound).
package repository
