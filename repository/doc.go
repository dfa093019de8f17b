// Package repository implements on Apache Cassandra, with gocqlx, the store
// interfaces of the domain kernel (shelf/domain) and of its service packages
// (accounts, moderation, groups, library, lifecycle, jobs): connection
// set-up (connect.go), schema migrations, and one file per table family
// with its CQL, its row structs and the conversions to domain types. Driver
// errors stop here (gocql.ErrNotFound becomes domain.ErrNotFound). Reads
// scan each row straight into its row struct's fields through gocql
// (scan.go), not through gocqlx's reflective struct mapping; only the row
// a compare-and-set that did not apply sends back goes through gocqlx
// (DB.cas).
//
// CQL is written as string constants beside each table file, not built from
// gocqlx table.Metadata. The statement scan test
// (TestWritesToLWTTablesAreConditional, statements_test.go) parses those
// constants to prove that rows managed by lightweight transactions (users,
// groups, content, account_tokens, account_factors, jobs and the claim
// tables) are only ever written by a conditional statement: no
// unconditional INSERT, UPDATE or DELETE reaches them. Statements built at
// run time could not be checked that way.
package repository
