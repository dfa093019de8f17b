package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"shelf/domain"
	"shelf/domain/lifecycle"
	"shelf/domain/moderation"
	"shelf/internal/config"
	"shelf/repository"
)

// adminCommand is one operator command: its name, what it takes, what it
// does, and its flags. bind declares the flags on fs and returns the run,
// which reads them once they are parsed; args are what the flags left, as
// many as nargs.
type adminCommand struct {
	name, synopsis, help string
	nargs                int
	bind                 func(fs *flag.FlagSet) adminRun
}

// adminRun is a command's work on the wired app, printing to out.
type adminRun func(ctx context.Context, a *App, args []string, out io.Writer) error

// adminCommands is every operator command, in the order usage lists them.
var adminCommands = []adminCommand{
	{name: "grant", synopsis: "<username-or-email>", nargs: 1,
		help: "make the account an admin (doing it twice is harmless)",
		bind: func(*flag.FlagSet) adminRun { return setAdmin(true) }},
	{name: "revoke", synopsis: "<username-or-email>", nargs: 1,
		help: "take the admin role away (likewise)",
		bind: func(*flag.FlagSet) adminRun { return setAdmin(false) }},
	{name: "repair-suspensions", synopsis: "[--dry-run] [--from <position>]",
		help: `make the suspended list, the reverse lookup, the expiry
entries and the bucket index agree with the accounts;
--dry-run only reports. Three phases, each reading one
table in 256 token ranges: accounts (each suspended
one's records, by key), lookups, then list rows (those
no account backs). A position names the phase and the
token reached (lookups:-4611686018427387904; a bare
token is one of accounts); every tenth is printed, and
--from resumes a stopped run after it, skipping the
phases before`,
		bind: func(fs *flag.FlagSet) adminRun {
			var opts moderation.RepairOptions
			fs.BoolVar(&opts.DryRun, "dry-run", false, "")
			fs.StringVar(&opts.From, "from", "", "")
			return func(ctx context.Context, a *App, _ []string, out io.Writer) error {
				return repairSuspensions(ctx, a, opts, out)
			}
		}},
	{name: "repair-deletions", synopsis: "[--dry-run]",
		help: `the job worker's pass over the account deletions under
way, run now (every api serve process runs it on its
own): found through the index of deletions in progress,
not by reading every account; a job another worker holds
is left to it; --dry-run only reports`,
		bind: dryRun(repairDeletions)},
	{name: "repair-closings", synopsis: "[--dry-run]",
		help: "the same for the group closings under way",
		bind: dryRun(repairClosings)},
	{name: "index-users", synopsis: "[--dry-run]",
		help: `write the search grams and username prefixes of every
account whose stored ones are not its keys' (accounts from
before migrations 019 and 030, which the user and people
searches do not find until then), reading the accounts in
256 token ranges; --dry-run only counts`,
		bind: dryRun(indexUsers)},
}

// dryRun binds a command whose one flag is --dry-run.
func dryRun(run func(ctx context.Context, a *App, dryRun bool, out io.Writer) error) func(*flag.FlagSet) adminRun {
	return func(fs *flag.FlagSet) adminRun {
		dry := fs.Bool("dry-run", false, "")
		return func(ctx context.Context, a *App, _ []string, out io.Writer) error { return run(ctx, a, *dry, out) }
	}
}

// adminUsage lists the commands of the table.
func adminUsage() error {
	var b strings.Builder
	b.WriteString("usage: api admin <command>\n\ncommands:")
	const column = 35
	for _, c := range adminCommands {
		head := "  " + c.name + " " + c.synopsis
		lines := strings.Split(c.help, "\n")
		if len(head) < column-1 {
			fmt.Fprintf(&b, "\n%-*s%s", column, head, lines[0])
			lines = lines[1:]
		} else {
			b.WriteString("\n" + head)
		}
		for _, l := range lines {
			fmt.Fprintf(&b, "\n%*s%s", column, "", l)
		}
	}
	return errors.New(b.String())
}

// parseAdmin finds the command args name and parses its flags and
// arguments; anything it does not know is the usage.
func parseAdmin(args []string) (string, adminRun, []string, error) {
	if len(args) == 0 {
		return "", nil, nil, adminUsage()
	}
	i := slices.IndexFunc(adminCommands, func(c adminCommand) bool { return c.name == args[0] })
	if i < 0 {
		return "", nil, nil, adminUsage()
	}
	c := adminCommands[i]
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	run := c.bind(fs)
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() != c.nargs {
		return "", nil, nil, adminUsage()
	}
	return c.name, run, fs.Args(), nil
}

// Admin runs the operator commands (args without "admin"), printing to
// out. They use the same SHELF_* settings as serve, so on the machine where
// `make run` serves they act on its data.
func Admin(ctx context.Context, cfg config.Config, logger zerolog.Logger, args []string, out io.Writer, options ...Option) error {
	_, run, rest, err := parseAdmin(args)
	if err != nil {
		return err
	}
	// The operator commands run compare-and-sets too: the same check. They
	// act on a keyspace `api migrate` (or serve) made and migrated, and
	// never make or migrate one: a mistyped SHELF_KEYSPACE would have been
	// made with the default replication and all of the schema, the
	// command reporting on an empty one, and a new release's command run
	// before the upgrade would have migrated the deployment's keyspace
	// (TestAdminCommandsNeitherMakeNorMigrateAKeyspace).
	session, cfg, err := connectChecked(ctx, cfg, logger, false, nil, wiringOf(options).serial)
	if err != nil {
		return err
	}
	defer session.Close()
	ready, err := repository.NewReadiness(session)
	if err != nil {
		return err
	}
	if err := ready.CheckReady(ctx); err != nil {
		if errors.Is(err, domain.ErrSchemaBehind) {
			return fmt.Errorf("keyspace %s is behind this release (%w): run `api migrate` first, then the command again", cfg.Cassandra.Keyspace, err)
		}
		return err
	}
	a, err := New(cfg, logger, session, nil, options...)
	if err != nil {
		return err
	}
	return run(ctx, a, rest, out)
}

// setAdmin grants (or revokes) the admin role of the account args[0] names.
func setAdmin(grant bool) adminRun {
	return func(ctx context.Context, a *App, args []string, out io.Writer) error {
		u, err := a.Accounts.SetAdmin(ctx, args[0], grant)
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
	case err != nil:
		// Stopped, or some reads or fixes failed: nothing says all agree.
		fmt.Fprintf(out, "suspensions: %d problems found, %d fixes applied, then errors (below): run again\n", len(rep.Problems), rep.Fixed)
	case len(rep.Problems) == 0:
		fmt.Fprintln(out, "suspensions: all records agree")
	case dryRun:
		fmt.Fprintf(out, "suspensions: %d problems found (dry run: nothing changed)\n", len(rep.Problems))
	default:
		fmt.Fprintf(out, "suspensions: %d problems found, %d fixes applied\n", len(rep.Problems), rep.Fixed)
	}
	return err
}

// indexUsers writes the search grams and username prefixes accounts from
// before migrations 019 and 030 lack, printing every tenth of the ring and
// what it found.
func indexUsers(ctx context.Context, a *App, dryRun bool, out io.Writer) error {
	shown := -1
	rep, err := repository.NewUserSearch(a.DB).IndexAll(ctx, dryRun, func(done float64) {
		if tenth := int(done * 10); tenth > shown {
			shown = tenth
			fmt.Fprintf(out, "accounts read: %3.0f%%\n", done*100)
		}
	})
	return printIndexed(out, dryRun, rep, err)
}

// printIndexed prints what index-users found and did, and returns the
// command's error: err, or, when writes' outcomes stayed unknown, one
// saying so (the run is not done: its exit status says it, as its
// output does).
func printIndexed(out io.Writer, dryRun bool, rep repository.IndexReport, err error) error {
	for _, id := range rep.Unknown {
		fmt.Fprintf(out, "%s: the write's outcome is unknown; run again\n", id)
	}
	if err == nil && len(rep.Unknown) > 0 {
		err = fmt.Errorf("%d accounts' writes of unknown outcome: run again", len(rep.Unknown))
	}
	then := ""
	if err != nil {
		then = ", then errors (below): run again"
	}
	switch {
	case dryRun:
		fmt.Fprintf(out, "users: %d read, %d without their search grams or prefixes (dry run: nothing changed)%s\n", rep.Read, rep.Missing, then)
	default:
		fmt.Fprintf(out, "users: %d read, %d without their search grams or prefixes, %d written, %d changed meanwhile (their change wrote them)%s\n",
			rep.Read, rep.Missing, rep.Written, rep.Moved, then)
	}
	return err
}

// repairDeletions finishes the deletions left in progress and prints what
// it found.
func repairDeletions(ctx context.Context, a *App, dryRun bool, out io.Writer) error {
	rep, err := a.Lifecycle.RepairDeletions(ctx, dryRun)
	printInProgress(out, "deletions", dryRun, rep, err)
	return err
}

// repairClosings finishes the group closings left in progress and prints
// what it found.
func repairClosings(ctx context.Context, a *App, dryRun bool, out io.Writer) error {
	rep, err := a.Lifecycle.RepairClosings(ctx, dryRun)
	printInProgress(out, "closings", dryRun, rep, err)
	return err
}

// printInProgress prints what a repair of operations left in progress
// (deletions, closings) found and did: each problem, then a summary; a
// pass that ended in err (its index unreadable, a job failed) says so.
func printInProgress(out io.Writer, what string, dryRun bool, rep lifecycle.Report, err error) {
	for _, p := range rep.Problems {
		fmt.Fprintln(out, p)
	}
	switch {
	case err != nil:
		fmt.Fprintf(out, "%s: %d found, %d finished, %d stale entries removed, %d left to the worker holding their job, %d failed, then errors (below): run again\n",
			what, rep.Found, rep.Finished, rep.Stale, rep.Held, rep.Failed)
	case len(rep.Problems) == 0:
		fmt.Fprintf(out, "%s: none left in progress\n", what)
	case dryRun:
		fmt.Fprintf(out, "%s: %d left in progress (dry run: nothing changed)\n", what, len(rep.Problems))
	default:
		fmt.Fprintf(out, "%s: %d found, %d finished, %d stale entries removed, %d left to the worker holding their job, %d failed (the next pass takes them on)\n",
			what, rep.Found, rep.Finished, rep.Stale, rep.Held, rep.Failed)
	}
}
