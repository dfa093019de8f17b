// Package domain is shelf's business, split into rooms. This package is
// the small kernel every capability shares; each capability is a package
// of its own under it:
//
//	domain              the kernel: the error vocabulary, ids, the text rules
//	                    of names and emails, the account row (User, with its
//	                    Suspension) and who is calling (Principal), the claim
//	                    protocol (Claimer), the one compare-and-set loop
//	                    (Retry), pages and cursors (Page, EncodeCursor)
//	domain/accounts     signup, login, sessions, account changes, admins
//	domain/moderation   suspend, unsuspend, the suspended list, sweeper, repair
//	domain/groups       groups, their members and capacity
//	domain/library      content, sharing, fan-out, library pages, rebuild
//	domain/jobs         the rows of the jobs a request begins and a worker
//	                    finishes, and their leases
//	domain/lifecycle    the workflows that span services: deleting an
//	                    account, closing a group, rebuilding a library, the
//	                    job worker that finishes them, and their repairs
//
// Why packages and not one package with clear files: the compiler then
// keeps each service to its own stores. A service is built from the stores
// and collaborators it uses, each a small interface declared where it is
// consumed (moderation's Admins, library's GroupDirectory ...), and
// internal/app satisfies them; no service can reach into another's fields,
// and each can be built on fakes alone. A service package imports the
// kernel only, never another service, and the kernel imports none of them;
// a workflow that needs several services lives on the floor above them,
// domain/lifecycle, which calls their exported steps and which nothing
// else in domain imports (architecture_test.go checks all three). The
// account row lives in the kernel because three capabilities read it and
// moderation changes it; the claim protocol lives here because accounts
// and groups both claim unique names.
//
// The invariants the services keep (U1-U11, S1-S6, L1-L7) and the designs
// that keep them are in docs/design/. Everything here imports only the
// standard library, plus golang.org/x/text for NFKC and case folding.
package domain
