package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rs/zerolog"

	"shelf/internal/config"
)

const adminUsage = `usage: api admin <command>

commands:
  grant <username-or-email>   make the account an admin (doing it twice is harmless)
  revoke <username-or-email>  take the admin role away (likewise)`

// admin runs the operator commands. They use the same SHELF_* settings as
// serve, so on the machine where `make run` serves they act on its data.
func admin(ctx context.Context, cfg config.Config, logger zerolog.Logger, args []string, out io.Writer) error {
	if len(args) != 2 || (args[0] != "grant" && args[0] != "revoke") {
		return errors.New(adminUsage)
	}
	session, err := connect(ctx, cfg, logger, true)
	if err != nil {
		return err
	}
	defer session.Close()
	a, err := newApp(cfg, logger, session)
	if err != nil {
		return err
	}
	grant := args[0] == "grant"
	u, err := a.accounts.SetAdmin(ctx, args[1], grant)
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
