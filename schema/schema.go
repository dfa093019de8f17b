// Package schema holds shelf's CQL migrations, numbered NNN_name.cql and
// applied in order by gocqlx's migrate package (see repository.Migrate).
// A file is never edited once it has landed: migrate checks each applied
// file's checksum. Statements are separated by ';', so comments must not
// contain one.
package schema

import "embed"

// FS is the migrations, embedded in the binary.
//
//go:embed *.cql
var FS embed.FS
