package app

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rs/zerolog"

	"shelf/internal/config"
	"shelf/repository"
)

const adminUsage = `usage: api admin <command>

commands:
  grant <username-or-email>        make the account an admin (doing it twice is harmless)
  revoke <username-or-email>       take the admin role away (likewise)
  repair-suspensions [--dry-run]   make the suspended list, the reverse lookup and the bucket
                                   index agree with the accounts; --dry-run only reports`

// Admin runs the operator commands (args without "admin"), printing to
// out. They use the same SHELF_* settings as serve, so on the machine where
// `make run` serves they act on its data.
func Admin(ctx context.Context, cfg config.Config, logger zerolog.Logger, args []string, out io.Writer) error {
	repair := len(args) >= 1 && args[0] == "repair-suspensions"
	switch {
	case repair && (len(args) == 1 || (len(args) == 2 && args[1] == "--dry-run")):
	case !repair && len(args) == 2 && (args[0] == "grant" || args[0] == "revoke"):
	default:
		return errors.New(adminUsage)
	}
	session, err := Connect(ctx, cfg, logger, true, nil)
	if err != nil {
		return err
	}
	defer session.Close()
	a, err := New(cfg, logger, session, nil)
	if err != nil {
		return err
	}
	if repair {
		return repairSuspensions(ctx, a, len(args) == 2, out)
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
func repairSuspensions(ctx context.Context, a *App, dryRun bool, out io.Writer) error {
	rep, err := a.Moderation.RepairSuspensions(ctx, repository.NewAudit(a.DB), dryRun)
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
