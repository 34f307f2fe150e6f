package postgres

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/litcrawl/litcrawl/internal/redact"
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
	if u.User != "" && !u.HasPass {
		// A user name alone is no secret here (it is a role, not a token).
		u.Redacted = strings.Replace(u.Redacted, "://"+redact.Mask+"@", "://"+url.User(u.User).String()+"@", 1)
	}
	c := &config{table: defaultTable, timeout: defaultTimeout, maxConns: defaultMaxConns}
	for k := range u.Query {
		if why, ok := secretParams[k]; ok {
			return nil, u.Errorf("parameter %q is not taken: %s", k, why)
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
			switch name {
			case "sslmode":
				if !slices.Contains(sslModes, v) {
					return fmt.Errorf("expected one of %s", strings.Join(sslModes, ", "))
				}
			case "sslrootcert", "sslcert", "sslkey":
				if name == "sslrootcert" && v == "system" {
					break
				}
				if err := smallFile(v); err != nil {
					return err
				}
			case "connect_timeout":
				var n int
				if _, err := fmt.Sscan(v, &n); err != nil || n < 1 || n > maxConnectTimeout || fmt.Sprint(n) != v {
					return fmt.Errorf("expected a number of seconds from 1 to %d", maxConnectTimeout)
				}
			}
			libpq[name] = v
			return nil
		}})
	}
	if err := u.Apply(params...); err != nil {
		return nil, err
	}
	if c.timeout > maxTimeout {
		return nil, u.Errorf("timeout=%v: expected at most %v", c.timeout, maxTimeout)
	}
	schema, name, qualified := strings.Cut(table, ".")
	if !qualified {
		schema, name = "", table
	}
	if !reIdent.MatchString(name) || qualified && !reIdent.MatchString(schema) {
		return nil, u.Errorf("table=%q: expected a table name of lower-case letters, digits and _ (at most 63), optionally after a schema name and a dot, e.g. table=papers or table=lit.papers", table)
	}
	if strings.HasPrefix(name, "litcrawl_") {
		return nil, u.Errorf("table=%q: names starting with litcrawl_ are the sink's own tables", table)
	}
	c.schema, c.table = schema, name
	if u.Name == "" && libpq["dbname"] == "" && os.Getenv("PGDATABASE") == "" && libpq["service"] == "" {
		return nil, u.Errorf("expected a database after the host: postgres://USER@HOST:PORT/DATABASE?table=papers")
	}
	if u.HasPass {
		c.secrets = append(c.secrets, u.Pass)
	}

	// The connection string the driver parses: the URL without the sink's
	// own parameters, with an sslmode of the sink's choosing.
	base := "postgres://"
	if u.User != "" || u.HasPass {
		ui := url.User(u.User)
		if u.HasPass {
			ui = url.UserPassword(u.User, u.Pass)
		}
		base += ui.String() + "@"
	}
	base += strings.Join(u.Hosts, ",") + "/" + url.PathEscape(u.Name)
	connString := func(sslmode string) string {
		q := url.Values{}
		for k, v := range libpq {
			q.Set(k, v)
		}
		q.Set("sslmode", sslmode)
		if q.Get("connect_timeout") == "" {
			q.Set("connect_timeout", fmt.Sprint(defaultConnectTimeout))
		}
		return base + "?" + q.Encode()
	}
	fail := func(what string, err error) error {
		return u.Errorf("%s: %s", what, c.scrub(parseErrorText(err)))
	}

	// Where does it connect? Hosts come from the URL, PGHOST or a service.
	probe, err := pgconn.ParseConfig(connString("disable"))
	if err != nil {
		return nil, fail("cannot read the connection settings", err)
	}
	if probe.Password != "" {
		c.secrets = append(c.secrets, probe.Password)
	}
	hosts := []string{probe.Host}
	for _, f := range probe.Fallbacks {
		hosts = append(hosts, f.Host)
	}
	local := true
	for _, h := range hosts {
		local = local && isLocal(h)
	}
	asked, from := libpq["sslmode"], "sslmode"
	if asked == "" {
		if env := os.Getenv("PGSSLMODE"); env != "" {
			if !slices.Contains(sslModes, env) {
				return nil, u.Errorf("PGSSLMODE=%q: expected one of %s", env, strings.Join(sslModes, ", "))
			}
			asked, from = env, "PGSSLMODE"
		}
	}
	mode, fallback := tlsPolicy(asked, local)
	if mode == "disable" {
		c.tls = "plaintext"
		if asked == "" {
			c.tls = "plaintext (loopback or socket; add sslmode=verify-full for TLS)"
		}
	} else {
		c.tls = "TLS, certificate verified (" + mode + ")"
		if fallback {
			c.tls += ", plaintext if the server has no TLS (loopback)"
		}
		if asked != "" && asked != mode {
			c.tls += "; " + from + "=" + asked + " is taken as " + mode + ": the certificate is always verified"
		}
	}

	pc, err := pgxpool.ParseConfig(connString(mode))
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
	// Every commit is durable before Write returns, whatever the server's
	// default: the crawl state counts on it.
	cc.RuntimeParams["synchronous_commit"] = "on"
	if cc.RuntimeParams["application_name"] == "" {
		cc.RuntimeParams["application_name"] = "litcrawl"
	}
	pc.MaxConns = int32(c.maxConns)
	pc.MinConns = 0
	pc.MaxConnIdleTime = 5 * time.Minute
	pc.HealthCheckPeriod = 30 * time.Second
	c.pool = pc

	port := fmt.Sprint(cc.Port)
	c.description = describe(u, cc.Host, port, cc.Database, c.qualified())
	return c, nil
}

// smallFile: a certificate or key file must be a regular file of at most
// 1 MiB (not a device, a FIFO or a directory the driver would read).
func smallFile(p string) error {
	info, err := os.Stat(p)
	switch {
	case err != nil:
		return fmt.Errorf("expected a readable file: %v", err)
	case !info.Mode().IsRegular():
		return fmt.Errorf("expected a regular file, not a %s", info.Mode().Type())
	case info.Size() > 1<<20:
		return fmt.Errorf("expected a certificate or key file, not %d bytes", info.Size())
	}
	return nil
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

// describe is the URL for messages: user, host and database, no password
// and no parameter but the table (and the socket directory).
func describe(u *sinkurl.URL, host, port, db, table string) string {
	d := "postgres://"
	if u.User != "" {
		d += url.User(u.User).String() + "@"
	}
	extra := ""
	switch {
	case len(u.Hosts) > 0:
		d += strings.Join(u.Hosts, ",")
	case strings.HasPrefix(host, "/"):
		extra = "&host=" + host
	default:
		d += net.JoinHostPort(host, port)
	}
	return d + "/" + url.PathEscape(db) + "?table=" + table + extra
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
func (c *config) scrub(msg string) string {
	for _, s := range c.secrets {
		if len(s) >= 4 {
			msg = strings.ReplaceAll(msg, s, "REDACTED")
			msg = strings.ReplaceAll(msg, url.QueryEscape(s), "REDACTED")
			msg = strings.ReplaceAll(msg, url.PathEscape(s), "REDACTED")
		}
	}
	return msg
}
