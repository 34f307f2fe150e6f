package postgres

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgservicefile"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/litcrawl/litcrawl/internal/redact"
	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/sinkurl"
)

// Defaults and bounds of the postgres:// parameters.
const (
	defaultTable          = "papers"
	defaultTimeout        = 30 * time.Second
	maxTimeout            = 10 * time.Minute
	defaultMaxConns       = 4
	maxMaxConns           = 64
	defaultConnectTimeout = 10 // seconds
	maxConnectTimeout     = 600
	maxTableName          = 40 // "_journal_published_idx" after it stays within 63
)

// libpqParams are the connection parameters a postgres:// URL may carry,
// handed to the driver as they are. Secrets are not among them: a password
// comes from the URL's user information or from the libpq environment
// (PGPASSWORD, PGPASSFILE, PGSERVICEFILE), never from a parameter.
var libpqParams = []string{"host", "port", "dbname", "user", "sslmode", "sslrootcert", "sslcert", "sslkey",
	"sslsni", "connect_timeout", "application_name", "target_session_attrs", "service", "channel_binding",
	"require_auth"}

// secretParams are refused with a word on where the secret goes instead.
var secretParams = map[string]string{
	"password":    "give the password in the URL's user information (postgres://user:PASSWORD@host/db), in PGPASSWORD, or in a password file (~/.pgpass, PGPASSFILE)",
	"sslpassword": "use an unencrypted client key file (sslkey), readable only by the crawler's user",
	"passfile":    "name the password file in PGPASSFILE",
	"servicefile": "name the service file in PGSERVICEFILE",
	"options":     "the crawler sets the session's settings itself",
}

var sslModes = []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}

var reIdent = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// config is what a postgres:// URL says.
type config struct {
	schema, table string // schema "" = the connection's current schema
	timeout       time.Duration
	maxConns      int
	tls           string // what the connection does: "plaintext", "TLS, verified (…)", …
	description   string // the URL with its password hidden and only the table kept
	pool          *pgxpool.Config
	secrets       []string // what must never appear in a message
}

// parseURL reads postgres://[user[:password]@][host][:port][,host[:port]…]/DB?table=…
// (postgresql:// alike). The password comes from the user information or
// the libpq environment.
func parseURL(raw string) (*config, error) {
	u, err := sinkurl.Parse(raw)
	if err != nil {
		return nil, err
	}
	if strings.Contains(u.User, ":") {
		return nil, &sink.URLError{URL: "postgres://…", Reason: "the user name holds a colon (an encoded %3A?): a password goes after an unencoded colon, or in PGPASSWORD; the URL is not shown, it may hold the password"}
	}
	c, libpq, err := readParams(u)
	if err != nil {
		return nil, err
	}
	if u.HasPass {
		c.secrets = append(c.secrets, u.Pass)
	}
	// The connection string the driver parses: the URL without the sink's
	// own parameters, with an sslmode of the sink's choosing.
	conn := connString{base: baseURL(u), libpq: libpq}
	fail := func(what string, err error) error {
		return u.Errorf("%s: %s", what, c.scrub(parseErrorText(err)))
	}
	// Files the driver will read, named outside the URL: each must be a
	// small regular file (not /dev/zero, a FIFO, a directory). A service's
	// sslmode counts as asked for.
	serviceMode, err := checkEnvFiles(libpq["service"])
	if err != nil {
		return nil, u.Errorf("%v", err)
	}
	// Where does it connect? Hosts come from the URL, PGHOST or a service.
	probe, err := pgconn.ParseConfig(conn.with("disable"))
	if err != nil {
		return nil, fail("cannot read the connection settings", err)
	}
	if probe.Password != "" {
		c.secrets = append(c.secrets, probe.Password)
	}
	asked, from, err := sslModeAsked(libpq["sslmode"], serviceMode)
	if err != nil {
		return nil, u.Errorf("%v", err)
	}
	mode, fallback := tlsPolicy(asked, allLocal(probe))
	pc, err := pgxpool.ParseConfig(conn.with(mode))
	if err != nil {
		return nil, fail("cannot read the connection settings", err)
	}
	cc := &pc.ConnConfig.Config
	if fallback {
		// prefer/allow on loopback: TLS when the server has it, verified.
		var plain []*pgconn.FallbackConfig
		for _, f := range append([]*pgconn.FallbackConfig{{Host: cc.Host, Port: cc.Port, TLSConfig: cc.TLSConfig}}, cc.Fallbacks...) {
			plain = append(plain, &pgconn.FallbackConfig{Host: f.Host, Port: f.Port})
		}
		cc.Fallbacks = append(cc.Fallbacks, plain...)
	}
	if err := checkTLS(cc, mode); err != nil {
		return nil, u.Errorf("%v", err)
	}
	c.pool = poolOf(pc, c.maxConns)
	c.description = describe(cc, c.qualified())
	c.tls = tlsWords(cc, asked, mode, from, fallback)
	return c, nil
}

// readParams reads the URL's parameters: the sink's own (table, timeout,
// max_conns) into the config, libpq's into a map for the driver; secrets
// in parameters are refused with where they go instead.
func readParams(u *sinkurl.URL) (*config, map[string]string, error) {
	c := &config{table: defaultTable, timeout: defaultTimeout, maxConns: defaultMaxConns}
	for _, k := range slices.Sorted(maps.Keys(u.Query)) { // the same error each time
		if why, ok := secretParams[k]; ok {
			return nil, nil, u.Errorf("parameter %q is not taken: %s", k, why)
		}
	}
	table := defaultTable
	libpq := map[string]string{}
	params := []sinkurl.Param{
		sinkurl.String("table", &table),
		sinkurl.Duration("timeout", &c.timeout, "30s"),
		sinkurl.Int("max_conns", &c.maxConns, 1, maxMaxConns, "a number of connections"),
	}
	for _, name := range libpqParams {
		params = append(params, sinkurl.Param{Name: name, Set: func(v string) error {
			if err := checkLibpq(name, v); err != nil {
				return err
			}
			libpq[name] = v
			return nil
		}})
	}
	if err := u.Apply(params...); err != nil {
		return nil, nil, err
	}
	if c.timeout > maxTimeout {
		return nil, nil, u.Errorf("timeout=%v: expected at most %v", c.timeout, maxTimeout)
	}
	if err := c.setTable(u, table); err != nil {
		return nil, nil, err
	}
	if u.Name == "" && libpq["dbname"] == "" && os.Getenv("PGDATABASE") == "" && libpq["service"] == "" && os.Getenv("PGSERVICE") == "" {
		return nil, nil, u.Errorf("expected a database after the host: postgres://USER@HOST:PORT/DATABASE?table=papers")
	}
	return c, libpq, nil
}

// checkLibpq checks a libpq parameter's value where the sink knows its
// rules.
func checkLibpq(name, v string) error {
	switch name {
	case "sslmode":
		if !slices.Contains(sslModes, v) {
			return fmt.Errorf("expected one of %s", strings.Join(sslModes, ", "))
		}
	case "sslrootcert", "sslcert", "sslkey":
		if name == "sslrootcert" && v == "system" {
			return nil
		}
		return sinkurl.SmallFile(v)
	case "application_name":
		if len(v) > 63 {
			return fmt.Errorf("expected at most 63 bytes (the server keeps no more)")
		}
	case "sslsni":
		if v != "0" && v != "1" {
			return fmt.Errorf("expected 0 or 1")
		}
	case "connect_timeout":
		var n int
		if _, err := fmt.Sscan(v, &n); err != nil || n < 1 || n > maxConnectTimeout || fmt.Sprint(n) != v {
			return fmt.Errorf("expected a number of seconds from 1 to %d", maxConnectTimeout)
		}
	}
	return nil
}

// setTable reads table=[SCHEMA.]NAME.
func (c *config) setTable(u *sinkurl.URL, table string) error {
	schema, name, qualified := strings.Cut(table, ".")
	if !qualified {
		schema, name = "", table
	}
	if !reIdent.MatchString(name) || len(name) > maxTableName || qualified && !reIdent.MatchString(schema) {
		return u.Errorf("table=%q: expected a table name of lower-case letters, digits and _ (at most %d: its index names add to it), optionally after a schema name and a dot, e.g. table=papers or table=lit.papers", table, maxTableName)
	}
	if strings.HasPrefix(name, "litcrawl_") {
		return u.Errorf("table=%q: names starting with litcrawl_ are the sink's own tables", table)
	}
	c.schema, c.table = schema, name
	return nil
}

// baseURL is the URL the driver connects by, without parameters.
func baseURL(u *sinkurl.URL) string {
	base := "postgres://"
	if u.User != "" || u.HasPass {
		ui := url.User(u.User)
		if u.HasPass {
			ui = url.UserPassword(u.User, u.Pass)
		}
		base += ui.String() + "@"
	}
	return base + strings.Join(u.Hosts, ",") + "/" + url.PathEscape(u.Name)
}

// connString is the driver's connection string: the base URL with the
// libpq parameters and an sslmode of the sink's choosing.
type connString struct {
	base  string
	libpq map[string]string
}

func (cs connString) with(sslmode string) string {
	q := url.Values{}
	for k, v := range cs.libpq {
		q.Set(k, v)
	}
	q.Set("sslmode", sslmode)
	if q.Get("connect_timeout") == "" {
		q.Set("connect_timeout", fmt.Sprint(defaultConnectTimeout))
	}
	return cs.base + "?" + q.Encode()
}

// allLocal: every host the connection may go to is this machine.
func allLocal(probe *pgconn.Config) bool {
	local := isLocal(probe.Host)
	for _, f := range probe.Fallbacks {
		local = local && isLocal(f.Host)
	}
	return local
}

// sslModeAsked is the sslmode asked for, as libpq takes it: the URL's,
// else the service's, else PGSSLMODE ("" when none); from names where it
// came from.
func sslModeAsked(inURL, serviceMode string) (asked, from string, err error) {
	asked, from = inURL, "sslmode"
	if asked == "" && serviceMode != "" {
		if !slices.Contains(sslModes, serviceMode) {
			return "", "", fmt.Errorf("the service's sslmode=%q: expected one of %s", serviceMode, strings.Join(sslModes, ", "))
		}
		asked, from = serviceMode, "the service's sslmode"
	}
	if env := os.Getenv("PGSSLMODE"); asked == "" && env != "" {
		if !slices.Contains(sslModes, env) {
			return "", "", fmt.Errorf("PGSSLMODE=%q: expected one of %s", env, strings.Join(sslModes, ", "))
		}
		asked, from = env, "PGSSLMODE"
	}
	return asked, from, nil
}

// poolOf sets the pool's bounds, and what every connection of it runs
// with: every commit durable before Write returns, whatever the server's
// default (the crawl state counts on it).
func poolOf(pc *pgxpool.Config, maxConns int) *pgxpool.Config {
	cc := &pc.ConnConfig.Config
	cc.RuntimeParams["synchronous_commit"] = "on"
	if cc.RuntimeParams["application_name"] == "" {
		cc.RuntimeParams["application_name"] = "litcrawl"
	}
	pc.MaxConns = int32(maxConns)
	pc.MinConns = 0
	pc.MaxConnIdleTime = 5 * time.Minute
	pc.HealthCheckPeriod = 30 * time.Second
	return pc
}

// checkEnvFiles holds the files named by the libpq environment, by a
// service (the URL's, else PGSERVICE) and the default ones in the home
// directory to what the URL's own must be, and returns the service's
// sslmode ("" when none).
func checkEnvFiles(service string) (sslmode string, err error) {
	home, _ := os.UserHomeDir()
	files := map[string]string{}
	for _, env := range []string{"PGSSLROOTCERT", "PGSSLCERT", "PGSSLKEY", "PGPASSFILE", "PGSERVICEFILE"} {
		if v := os.Getenv(env); v != "" && (env != "PGSSLROOTCERT" || v != "system") {
			files[env] = v
		}
	}
	if home != "" {
		for _, f := range []string{".pgpass", ".pg_service.conf", ".postgresql/root.crt", ".postgresql/postgresql.crt", ".postgresql/postgresql.key"} {
			files["~/"+f] = filepath.Join(home, f)
		}
	}
	for _, what := range slices.Sorted(maps.Keys(files)) {
		if _, err := os.Stat(files[what]); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := sinkurl.SmallFile(files[what]); err != nil {
			return "", fmt.Errorf("%s (%s): %v", what, files[what], err)
		}
	}
	if service == "" {
		service = os.Getenv("PGSERVICE")
	}
	if service == "" {
		return "", nil
	}
	path := os.Getenv("PGSERVICEFILE")
	if path == "" && home != "" {
		path = filepath.Join(home, ".pg_service.conf")
	}
	sf, err := pgservicefile.ReadServicefile(path)
	if err != nil {
		return "", nil // the driver says what is wrong with it
	}
	svc, err := sf.GetService(service)
	if err != nil {
		return "", nil
	}
	for _, k := range []string{"sslrootcert", "sslcert", "sslkey", "passfile"} {
		if v := svc.Settings[k]; v != "" && v != "system" {
			if err := sinkurl.SmallFile(v); err != nil {
				return "", fmt.Errorf("service %s's %s (%s): %v", service, k, v, err)
			}
		}
	}
	return svc.Settings["sslmode"], nil
}

// tlsPolicy is the sslmode the driver is given for the one asked ("" for
// none) and whether a plaintext connection may follow a failed TLS one.
// The certificate is always verified when TLS is used: require, prefer
// and allow are taken as verify-full. Plaintext is the default only when
// every host is a socket or on loopback; elsewhere it takes sslmode=disable.
func tlsPolicy(asked string, local bool) (mode string, plaintextFallback bool) {
	switch asked {
	case "":
		if local {
			return "disable", false
		}
		return "verify-full", false
	case "disable", "verify-ca", "verify-full":
		return asked, false
	case "require":
		return "verify-full", false
	default: // allow, prefer
		return "verify-full", local
	}
}

// checkTLS holds the driver's configuration to the policy: no TLS without
// verification; plaintext only with sslmode=disable or to a local host.
func checkTLS(cc *pgconn.Config, mode string) error {
	all := append([]*pgconn.FallbackConfig{{Host: cc.Host, Port: cc.Port, TLSConfig: cc.TLSConfig}}, cc.Fallbacks...)
	for _, f := range all {
		switch {
		case f.TLSConfig == nil && mode != "disable" && !isLocal(f.Host):
			return fmt.Errorf("host %s: plaintext to a host off loopback takes sslmode=disable", f.Host)
		case f.TLSConfig != nil && f.TLSConfig.InsecureSkipVerify && f.TLSConfig.VerifyPeerCertificate == nil:
			return fmt.Errorf("host %s: TLS without certificate verification is refused", f.Host)
		}
	}
	return nil
}

// isLocal: a Unix socket directory, localhost or a loopback address.
func isLocal(host string) bool {
	if strings.HasPrefix(host, "/") || strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// describe is where the sink writes, for messages, from the settings the
// driver will use (the URL, the environment, a service): the user, the
// hosts, the database and the table; never a password.
func describe(cc *pgconn.Config, table string) string {
	var tcp, sockets []string
	seen := map[string]bool{}
	for _, f := range append([]*pgconn.FallbackConfig{{Host: cc.Host, Port: cc.Port}}, cc.Fallbacks...) {
		hp := net.JoinHostPort(f.Host, fmt.Sprint(f.Port))
		if strings.HasPrefix(f.Host, "/") {
			hp = f.Host
		}
		if seen[hp] {
			continue
		}
		seen[hp] = true
		if strings.HasPrefix(f.Host, "/") {
			sockets = append(sockets, "&host="+f.Host+"&port="+fmt.Sprint(f.Port))
		} else {
			tcp = append(tcp, hp)
		}
	}
	d := "postgres://"
	if cc.User != "" {
		d += url.User(cc.User).String() + "@"
	}
	return d + strings.Join(tcp, ",") + "/" + url.PathEscape(cc.Database) + "?table=" + table + strings.Join(sockets, "")
}

// tlsWords says what the connection does about TLS.
func tlsWords(cc *pgconn.Config, asked, mode, from string, fallback bool) string {
	if cc.TLSConfig == nil {
		if asked == "" {
			return "plaintext (loopback or socket; add sslmode=verify-full for TLS)"
		}
		return "plaintext"
	}
	w := "TLS, certificate verified (" + mode + ")"
	if fallback {
		w += ", else plaintext (loopback)"
	}
	if asked != "" && asked != mode {
		w += "; " + from + "=" + asked + " is taken as " + mode + ": the certificate is always verified"
	}
	return w
}

// qualified is the table as messages name it: schema.table, or the table
// alone until the schema is known.
func (c *config) qualified() string {
	if c.schema == "" {
		return c.table
	}
	return c.schema + "." + c.table
}

// parseErrorText is a driver's parse error without the connection string
// it quotes.
func parseErrorText(err error) string {
	if pe, ok := err.(*pgconn.ParseConfigError); ok {
		msg := pe.Error()
		if i := strings.Index(msg, "`: "); i >= 0 {
			return msg[i+3:]
		}
		if inner := pe.Unwrap(); inner != nil {
			return inner.Error()
		}
	}
	return err.Error()
}

// scrub hides every secret of the configuration in a message.
func (c *config) scrub(msg string) string { return redact.Secrets(msg, c.secrets...) }
