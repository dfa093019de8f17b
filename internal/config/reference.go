package config

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// ReferencePath is where the configuration reference lives, from the
// repository's root.
const ReferencePath = "docs/configuration.md"

// seeAlso links a variable to the page that explains it at length.
var seeAlso = map[string]string{
	"SHELF_SERIAL_CONSISTENCY":   "[Running in two regions](operations.md#running-in-two-regions)",
	"SHELF_LOCAL_DC":             "[Running in two regions](operations.md#running-in-two-regions)",
	"SHELF_PPROF_ADDR":           "[Profiling](operations.md#profiling)",
	"SHELF_METRICS_ADDR":         "[Metrics and browsers](operations.md#metrics-and-browsers)",
	"SHELF_CORS_ORIGINS":         "[Metrics and browsers](operations.md#metrics-and-browsers)",
	"SHELF_THROTTLE_PER_ADDRESS": "[Throttling](api.md#throttling)",
	"SHELF_MAILER":               "[Seeing the mail in development](api.md#seeing-the-mail-in-development)",
	"SHELF_FACTOR_KEYS":          "[Second factors](api.md#second-factors)",
}

var roleTitles = []struct {
	role        Role
	title, text string
}{
	{Operator, "What an operator sets",
		"The settings of a deployment: where it listens and what it reaches, credentials, mail, and security policy."},
	{Tuning, "What tunes shelf",
		"Timeouts, limits, worker sizes and intervals. The defaults are measured (see the design's [cost model](design/cost-model.md) and [capacity model](design/capacity-model.md)); change one when a measurement says so."},
}

var settingName = regexp.MustCompile(`SHELF_[A-Z0-9_]*[A-Z0-9*]`)

// Reference renders docs/configuration.md from Vars: one table per Role,
// in the order of Vars. make generate writes it; a test fails when the
// committed file differs.
func Reference() []byte {
	var b bytes.Buffer
	b.WriteString(`<!-- Generated from internal/config/config.go (Vars) by make generate; do not edit. -->
# Configuration of the API

The ` + "`api`" + ` binary (` + "`api serve`, `api migrate`, `api admin`" + `) reads ` + "`SHELF_*`" + ` environment
variables. A bad value stops start-up with a message naming the variable; the
effective configuration is logged at start (the passwords masked).
` + "`SHELF_REPLICATION`" + ` is used when the keyspace is created; an existing
keyspace keeps its replication (changing it is an ` + "`ALTER KEYSPACE`" + ` and a
repair, an operator's call). The local Cassandra launcher's own settings
are in [Working on shelf](development.md#the-launcher).
`)
	for _, r := range roleTitles {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n| variable | default | meaning |\n|---|---|---|\n", r.title, r.text)
		for _, v := range Vars {
			if v.Role != r.role {
				continue
			}
			def := "(empty)"
			if v.Default != "" {
				def = "`" + v.Default + "`"
			}
			help := settingName.ReplaceAllString(strings.ReplaceAll(v.Help, "|", `\|`), "`$0`")
			if see, ok := seeAlso[v.Name]; ok {
				help += " (" + see + ")"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", v.Name, def, help)
		}
	}
	return b.Bytes()
}
