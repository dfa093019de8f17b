package app

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rs/zerolog"

	"shelf/domain/lifecycle"
	"shelf/domain/moderation"
	"shelf/internal/config"
	"shelf/repository"
)

const adminUsage = `usage: api admin <command>

commands:
  grant <username-or-email>        make the account an admin (doing it twice is harmless)
  revoke <username-or-email>       take the admin role away (likewise)
  repair-suspensions [--dry-run] [--from <position>]
                                   make the suspended list, the reverse lookup, the expiry
                                   entries and the bucket index agree with the accounts;
                                   --dry-run only reports. Three phases, each reading one
                                   table in 256 token ranges: accounts (each suspended
                                   one's records, by key), lookups, then list rows (those
                                   no account backs). A position names the phase and the
                                   token reached (lookups:-4611686018427387904; a bare
                                   token is one of accounts); every tenth is printed, and
                                   --from resumes a stopped run after it, skipping the
                                   phases before
  repair-deletions [--dry-run]     the job worker's pass over the account deletions under
                                   way, run now (every api serve process runs it on its
                                   own): found through the index of deletions in progress,
                                   not by reading every account; a job another worker holds
                                   is left to it; --dry-run only reports
  repair-closings [--dry-run]      the same for the group closings under way
  index-users [--dry-run]          write the search grams of every account that lacks them
                                   (accounts from before migration 019, which a moderator's
                                   search does not find until then), reading the accounts
                                   in 256 token ranges; --dry-run only counts`

// Admin runs the operator commands (args without "admin"), printing to
// out. They use the same SHELF_* settings as serve, so on the machine where
// `make run` serves they act on its data.
func Admin(ctx context.Context, cfg config.Config, logger zerolog.Logger, args []string, out io.Writer, options ...Option) error {
	repair := len(args) >= 1 && args[0] == "repair-suspensions"
	deletions := len(args) >= 1 && (args[0] == "repair-deletions" || args[0] == "repair-closings" || args[0] == "index-users")
	var opts moderation.RepairOptions
	switch {
	case deletions:
		for _, arg := range args[1:] {
			if arg != "--dry-run" {
				return errors.New(adminUsage)
			}
			opts.DryRun = true
		}
	case repair:
		for i := 1; i < len(args); i++ {
			switch {
			case args[i] == "--dry-run":
				opts.DryRun = true
			case args[i] == "--from" && i+1 < len(args):
				i++
				opts.From = args[i]
			default:
				return errors.New(adminUsage)
			}
		}
	case len(args) == 2 && (args[0] == "grant" || args[0] == "revoke"):
	default:
		return errors.New(adminUsage)
	}
	session, err := Connect(ctx, cfg, logger, true, nil)
	if err != nil {
		return err
	}
	defer session.Close()
	// The operator commands run compare-and-sets too: the same check.
	if cfg, err = checkRegions(ctx, cfg, session, logger, wiringOf(options).serial); err != nil {
		return err
	}
	a, err := New(cfg, logger, session, nil, options...)
	if err != nil {
		return err
	}
	if repair {
		return repairSuspensions(ctx, a, opts, out)
	}
	if deletions && args[0] == "index-users" {
		return indexUsers(ctx, a, opts.DryRun, out)
	}
	if deletions && args[0] == "repair-closings" {
		return repairClosings(ctx, a, opts.DryRun, out)
	}
	if deletions {
		return repairDeletions(ctx, a, opts.DryRun, out)
	}
	grant := args[0] == "grant"
	u, err := a.Accounts.SetAdmin(ctx, args[1], grant)
	if err != nil {
		return err
	}
	verb := "is now an admin"
	if !grant {
		verb = "is no longer an admin"
	}
	fmt.Fprintf(out, "%s (%s) %s\n", u.Username, u.ID, verb)
	return nil
}

// repairSuspensions runs the cross-check and prints what it found.
func repairSuspensions(ctx context.Context, a *App, opts moderation.RepairOptions, out io.Writer) error {
	dryRun := opts.DryRun
	phase, shown := "", -1
	opts.Progress = func(at moderation.Position, done float64) {
		// Every tenth of each phase: how far, and where to resume.
		if at.Phase != phase {
			phase, shown = at.Phase, -1
		}
		if tenth := int(done * 10); tenth > shown {
			shown = tenth
			fmt.Fprintf(out, "%s read: %3.0f%% (to resume after here: --from %s)\n", at.Phase, done*100, at)
		}
	}
	rep, err := a.Moderation.Repair(ctx, repository.NewAudit(a.DB), opts)
	for _, p := range rep.Problems {
		fmt.Fprintln(out, p)
	}
	switch {
	case len(rep.Problems) == 0:
		fmt.Fprintln(out, "suspensions: all records agree")
	case dryRun:
		fmt.Fprintf(out, "suspensions: %d problems found (dry run: nothing changed)\n", len(rep.Problems))
	default:
		fmt.Fprintf(out, "suspensions: %d problems found, %d fixes applied\n", len(rep.Problems), rep.Fixed)
	}
	return err
}

// indexUsers writes the search grams accounts from before migration 019
// lack, printing every tenth of the ring and what it found.
func indexUsers(ctx context.Context, a *App, dryRun bool, out io.Writer) error {
	shown := -1
	rep, err := repository.NewUserSearch(a.DB).IndexAll(ctx, dryRun, func(done float64) {
		if tenth := int(done * 10); tenth > shown {
			shown = tenth
			fmt.Fprintf(out, "accounts read: %3.0f%%\n", done*100)
		}
	})
	for _, id := range rep.Unknown {
		fmt.Fprintf(out, "%s: the write's outcome is unknown; run again\n", id)
	}
	switch {
	case dryRun:
		fmt.Fprintf(out, "users: %d read, %d without their search grams (dry run: nothing changed)\n", rep.Read, rep.Missing)
	default:
		fmt.Fprintf(out, "users: %d read, %d without their search grams, %d written, %d changed meanwhile (their change wrote them)\n",
			rep.Read, rep.Missing, rep.Written, rep.Moved)
	}
	return err
}

// repairDeletions finishes the deletions left in progress and prints what
// it found.
func repairDeletions(ctx context.Context, a *App, dryRun bool, out io.Writer) error {
	rep, err := a.Lifecycle.RepairDeletions(ctx, dryRun)
	printInProgress(out, "deletions", dryRun, rep)
	return err
}

// repairClosings finishes the group closings left in progress and prints
// what it found.
func repairClosings(ctx context.Context, a *App, dryRun bool, out io.Writer) error {
	rep, err := a.Lifecycle.RepairClosings(ctx, dryRun)
	printInProgress(out, "closings", dryRun, rep)
	return err
}

// printInProgress prints what a repair of operations left in progress
// (deletions, closings) found and did: each problem, then a summary.
func printInProgress(out io.Writer, what string, dryRun bool, rep lifecycle.Report) {
	for _, p := range rep.Problems {
		fmt.Fprintln(out, p)
	}
	switch {
	case len(rep.Problems) == 0:
		fmt.Fprintf(out, "%s: none left in progress\n", what)
	case dryRun:
		fmt.Fprintf(out, "%s: %d left in progress (dry run: nothing changed)\n", what, len(rep.Problems))
	default:
		fmt.Fprintf(out, "%s: %d found, %d finished, %d stale entries removed, %d left to the worker holding their job, %d failed (the next pass takes them on)\n",
			what, rep.Found, rep.Finished, rep.Stale, rep.Held, rep.Failed)
	}
}
