package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The table's schema is versioned: each migration takes a table from one
// version to the next, and litcrawl_migrations (in the table's schema)
// records, per table, the versions applied. Opening the sink applies the
// missing ones, in order, in one transaction under an advisory lock, so
// two crawls opening at once migrate once. A table of a newer version
// than this build knows is refused: an older build must not write rows it
// does not understand.
type migration struct {
	version     int
	description string
	sql         string // {t} is the quoted table, {s} its quoted schema, {n} the table's bare name
}

// migrations are history: never edit one that shipped; add the next.
var migrations = []migration{
	{1, "papers table, indexes on doi, (journal_id, published) and full text", `
CREATE TABLE {t} (
	id               text PRIMARY KEY,
	doi              text,
	doi_url          text,
	arxiv_id         text,
	url              text,
	title            text,
	title_cn         text,
	authors          text[],
	abstract         text,
	abstract_cn      text,
	published        date,
	journal_id       bigint,
	journal_name     text,
	volume           text,
	pages            text,
	impact_factor    double precision,
	zone             bigint,
	subject          text,
	jcr_quartile     text,
	jcr_category     text,
	citations        bigint,
	open_access_pdf  text,
	publication_type text,
	warnings         text[],
	schema_version   bigint NOT NULL,
	source_url       text,
	source_page      bigint,
	source_position  bigint,
	run              text,
	fetched_at       timestamptz,
	first_run        text,
	first_seen       timestamptz NOT NULL,
	updated_at       timestamptz,
	record           jsonb NOT NULL,
	search           tsvector GENERATED ALWAYS AS (
		pg_catalog.setweight(pg_catalog.to_tsvector('pg_catalog.english', pg_catalog.left(coalesce(title, ''), 4096)), 'A') ||
		pg_catalog.setweight(pg_catalog.to_tsvector('pg_catalog.english', pg_catalog.left(coalesce(abstract, ''), 65536)), 'B')) STORED
);
COMMENT ON TABLE {t} IS 'litcrawl: one row per paper, upserted by id; record is the whole record as delivered';
CREATE INDEX {n}_doi_idx ON {t} USING hash (pg_catalog.lower(doi));
CREATE INDEX {n}_journal_published_idx ON {t} (journal_id, published DESC);
CREATE INDEX {n}_search_idx ON {t} USING gin (search);
`},
	{2, "issue column: records of schema version 2 split the issue off the volume (journal.issue)", `
ALTER TABLE {t} ADD COLUMN issue text;
`},
	{3, "site_doi column: records of schema version 3 keep a DOI value that is no DOI apart from doi", `
ALTER TABLE {t} ADD COLUMN site_doi text;
`},
	{4, "revision and replaces columns: records of schema version 4 are revisions of a paper (a row keeps its latest; NULL is revision 1)", `
ALTER TABLE {t} ADD COLUMN revision bigint, ADD COLUMN replaces text;
`},
}

// companions are the sink's own tables beside the papers tables of a
// schema, made once, by the first table made there.
const companions = `
CREATE TABLE {s}.litcrawl_migrations (
	table_name  text NOT NULL,
	version     integer NOT NULL,
	description text NOT NULL,
	applied_at  timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (table_name, version)
);
COMMENT ON TABLE {s}.litcrawl_migrations IS 'litcrawl: the schema versions applied to each of its tables';
GRANT SELECT ON {s}.litcrawl_migrations TO PUBLIC;`

const writersTable = `
CREATE TABLE {s}.litcrawl_writers (
	table_name text NOT NULL,
	writer     text NOT NULL,
	commits    bigint NOT NULL,
	last_run   text,
	updated_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (table_name, writer)
);
COMMENT ON TABLE {s}.litcrawl_writers IS 'litcrawl: per table and crawl state (writer), the number of commits it made; the crawl state keeps the same number with the pages it committed';`

// tableSchema is a table's history and its shape at its latest version:
// thisBuild, the one this build writes (a test plays an earlier or a
// later build with another).
type tableSchema struct {
	migrations []migration
	columns    []column
}

// thisBuild is the schema this build writes.
var thisBuild = tableSchema{migrations: migrations, columns: columns}

// latest is the version the schema writes.
func (ts tableSchema) latest() int { return ts.migrations[len(ts.migrations)-1].version }

// column is one column of the table at the latest version.
type column struct {
	name, typ string // typ as format_type gives it
	// content: part of what the site says of the paper, updated when a
	// known paper comes again with other values.
	content bool
}

// columns are the table's columns at the latest version, in order.
var columns = []column{
	{"id", "text", false},
	{"doi", "text", true},
	{"doi_url", "text", true},
	{"arxiv_id", "text", true},
	{"url", "text", true},
	{"title", "text", true},
	{"title_cn", "text", true},
	{"authors", "text[]", true},
	{"abstract", "text", true},
	{"abstract_cn", "text", true},
	{"published", "date", true},
	{"journal_id", "bigint", true},
	{"journal_name", "text", true},
	{"volume", "text", true},
	{"issue", "text", true},
	{"pages", "text", true},
	{"impact_factor", "double precision", true},
	{"zone", "bigint", true},
	{"subject", "text", true},
	{"jcr_quartile", "text", true},
	{"jcr_category", "text", true},
	{"citations", "bigint", true},
	{"open_access_pdf", "text", true},
	{"publication_type", "text", true},
	{"warnings", "text[]", true},
	{"schema_version", "bigint", true},
	{"source_url", "text", true},
	{"source_page", "bigint", true},
	{"source_position", "bigint", true},
	{"run", "text", true},
	{"fetched_at", "timestamp with time zone", true},
	{"first_run", "text", false},
	{"first_seen", "timestamp with time zone", false},
	{"updated_at", "timestamp with time zone", false},
	{"record", "jsonb", true},
	{"search", "tsvector", false},
	{"site_doi", "text", true},
	{"revision", "bigint", true},
	{"replaces", "text", true},
}

// schemaLock is the advisory lock every litcrawl migration of a database
// takes ("litc").
const schemaLock = 0x6c697463

// names are the quoted names of the table and its companions.
type names struct {
	schema, table     string // bare
	qSchema, qTable   string // quoted, qualified
	qWriters, qMigr   string
	display, writers  string // schema.table, schema.litcrawl_writers
	displayMigrations string
}

func newNames(schema, table string) names {
	return names{
		schema: schema, table: table,
		qSchema:  pgx.Identifier{schema}.Sanitize(),
		qTable:   pgx.Identifier{schema, table}.Sanitize(),
		qWriters: pgx.Identifier{schema, "litcrawl_writers"}.Sanitize(),
		qMigr:    pgx.Identifier{schema, "litcrawl_migrations"}.Sanitize(),
		display:  schema + "." + table, writers: schema + ".litcrawl_writers",
		displayMigrations: schema + ".litcrawl_migrations",
	}
}

func (n names) expand(sql string) string {
	return strings.NewReplacer("{t}", n.qTable, "{s}", n.qSchema, "{n}", n.table).Replace(sql) // a bare name of [a-z0-9_]: no quotes needed
}

// migrate brings the table to the latest version, creating it on first
// use. It returns the versions it applied.
func migrate(ctx context.Context, conn *pgx.Conn, n names, ts tableSchema) (applied []int, err error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(schemaLock)); err != nil {
		return nil, err
	}
	h, err := readHave(ctx, tx, n)
	if err != nil {
		return nil, err
	}
	switch {
	case h.version > 0 && !h.table:
		return nil, &shapeError{n.display, fmt.Sprintf("is gone but %s says it is at schema version %d (dropped by hand?): delete its rows there (DELETE FROM %s WHERE table_name = '%s') to make it anew", n.displayMigrations, h.version, n.qMigr, n.table)}
	case h.version == 0 && h.table:
		return nil, &shapeError{n.display, "exists but was not made by this sink (it has no version in " + n.displayMigrations +
			"): name another table with ?table=NAME, or drop this one"}
	case h.version > ts.latest():
		return nil, &shapeError{n.display, fmt.Sprintf("is at schema version %d, made by a newer litcrawl; this build knows versions up to %d: upgrade litcrawl", h.version, ts.latest())}
	case h.version == ts.latest():
		return nil, tx.Commit(ctx)
	}
	if err := mayMigrate(ctx, tx, n, h.version, ts.latest(), h.table); err != nil {
		return nil, err
	}
	if err := companionsFor(ctx, tx, n, h); err != nil {
		return nil, err
	}
	for _, m := range ts.migrations {
		if m.version <= h.version {
			continue
		}
		if _, err := tx.Exec(ctx, n.expand(m.sql)); err != nil {
			return nil, fmt.Errorf("migration %d (%s): %w", m.version, m.description, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+n.qMigr+" (table_name, version, description) VALUES ($1, $2, $3)",
			n.table, m.version, m.description); err != nil {
			return nil, err
		}
		applied = append(applied, m.version)
	}
	return applied, tx.Commit(ctx)
}

// have is what a schema holds of the sink's tables: the table's version
// (0: none recorded) and which tables exist.
type have struct {
	version              int
	migr, table, writers bool
}

// readHave reads what the schema holds; a writers table gone while the
// papers stay is made again (empty: each crawl's Restore finds its last
// commit's papers in the table and counts on from its state's count).
func readHave(ctx context.Context, tx pgx.Tx, n names) (have, error) {
	var h have
	err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL, to_regclass($3) IS NOT NULL",
		n.qMigr, n.qTable, n.qWriters).Scan(&h.migr, &h.table, &h.writers)
	if err != nil {
		return h, err
	}
	if h.migr {
		if err := need(ctx, tx, n, "SELECT", "table", n.qMigr, n.displayMigrations, "GRANT SELECT ON "+n.qMigr+" TO {user}"); err != nil {
			return h, err
		}
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+n.qMigr+" WHERE table_name = $1",
			n.table).Scan(&h.version); err != nil {
			return h, err
		}
	}
	if h.version > 0 && h.table && !h.writers {
		if err := need(ctx, tx, n, "CREATE", "schema", n.schema, n.schema, n.writers+" is gone (dropped by hand?) and must be made again: run this once as a user who may"); err != nil {
			return h, err
		}
		if _, err := tx.Exec(ctx, n.expand(writersTable)); err != nil {
			return h, err
		}
		h.writers = true
	}
	return h, nil
}

// companionsFor makes the sink's own tables where they are missing, and
// for a table made anew zeroes the commit counts a dropped table of the
// same name left: they must not vouch for it, or a crawl state that
// counts its papers as delivered would not see that they are gone.
func companionsFor(ctx context.Context, tx pgx.Tx, n names, h have) error {
	if !h.migr {
		if _, err := tx.Exec(ctx, n.expand(companions)); err != nil {
			return err
		}
	} else if err := need(ctx, tx, n, "INSERT", "table", n.qMigr, n.displayMigrations, "a table made or migrated is recorded there: GRANT INSERT ON "+n.qMigr+" TO {user}"); err != nil {
		return err
	}
	if !h.writers {
		if _, err := tx.Exec(ctx, n.expand(writersTable)); err != nil {
			return err
		}
	}
	if h.version != 0 {
		return nil
	}
	if h.writers {
		if err := checkPrivilegesOn(ctx, tx, n, n.qWriters, n.writers); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, "UPDATE "+n.qWriters+" SET commits = 0, updated_at = pg_catalog.now() WHERE table_name = $1 AND commits <> 0", n.table)
	return err
}

// mayMigrate: making a table takes CREATE on the schema; migrating one
// (ALTER TABLE) takes owning it.
func mayMigrate(ctx context.Context, tx pgx.Tx, n names, version, latest int, haveTable bool) error {
	if !haveTable {
		return need(ctx, tx, n, "CREATE", "schema", n.schema, n.schema,
			"to create the table, run crawl sink check (or the first crawl) as a user who may, or GRANT CREATE ON SCHEMA "+n.qSchema+" TO {user}")
	}
	var owns bool
	if err := tx.QueryRow(ctx, "SELECT pg_has_role(relowner, 'USAGE') FROM pg_class WHERE oid = $1::regclass", n.qTable).Scan(&owns); err != nil {
		return err
	}
	if !owns {
		return &privilegeError{table: n.display, user: currentUser(ctx, tx), privilege: "ownership", on: "table " + n.display,
			fix: fmt.Sprintf("migrating it from schema version %d to %d alters it, which takes its owner: run this build once as the table's owner", version, latest)}
	}
	return nil
}

func currentUser(ctx context.Context, q querier) string {
	var user string
	q.QueryRow(ctx, "SELECT current_user").Scan(&user)
	return user
}

// checkShape makes sure the table has the columns the sink writes, with
// their types, and id as its primary key. Columns a user added are fine
// (nullable or with a default).
func checkShape(ctx context.Context, conn *pgx.Conn, n names, ts tableSchema) error {
	rows, err := conn.Query(ctx, `SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
		WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`, n.qTable)
	if err != nil {
		return err
	}
	have := map[string]string{}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return err
		}
		have[name] = typ
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var problems []string
	for _, c := range ts.columns {
		switch typ, ok := have[c.name]; {
		case !ok:
			problems = append(problems, fmt.Sprintf("column %s is missing", c.name))
		case typ != c.typ:
			problems = append(problems, fmt.Sprintf("column %s is %s, expected %s", c.name, typ, c.typ))
		}
	}
	var pk []string
	err = conn.QueryRow(ctx, `SELECT coalesce(array_agg(a.attname::text ORDER BY a.attname), '{}') FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indrelid = $1::regclass AND i.indisprimary`, n.qTable).Scan(&pk)
	if err != nil {
		return err
	}
	if len(pk) != 1 || pk[0] != "id" {
		problems = append(problems, fmt.Sprintf("its primary key is (%s), expected (id)", strings.Join(pk, ", ")))
	}
	if len(problems) > 0 {
		return &shapeError{n.display, "does not have the shape the sink writes (changed by hand?): " + strings.Join(problems, "; ")}
	}
	return nil
}

// checkPrivileges names the first privilege the user lacks on the
// tables the sink writes.
func checkPrivileges(ctx context.Context, conn *pgx.Conn, n names) error {
	if err := checkPrivilegesOn(ctx, conn, n, n.qTable, n.display); err != nil {
		return err
	}
	return checkPrivilegesOn(ctx, conn, n, n.qWriters, n.writers)
}

// checkPrivilegesOn names the first of SELECT, INSERT and UPDATE the user
// lacks on one table.
func checkPrivilegesOn(ctx context.Context, q querier, n names, quoted, display string) error {
	for _, p := range []string{"SELECT", "INSERT", "UPDATE"} {
		if err := need(ctx, q, n, p, "table", quoted, display,
			"GRANT SELECT, INSERT, UPDATE ON "+n.qTable+", "+n.qWriters+" TO {user}"); err != nil {
			return err
		}
	}
	return nil
}

type querier interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}

// need is a *privilegeError when the user lacks privilege on a table or a
// schema (given as has_table_privilege or has_schema_privilege take it),
// with fix, in which {user} is the user, as the way out.
func need(ctx context.Context, q querier, n names, privilege, kind, object, display, fix string) error {
	query := "SELECT has_table_privilege($1, $2)"
	if kind == "schema" {
		query = "SELECT has_schema_privilege($1, $2)"
	}
	var ok bool
	if err := q.QueryRow(ctx, query, object, privilege).Scan(&ok); err != nil || ok {
		return err
	}
	user := currentUser(ctx, q)
	return &privilegeError{table: n.display, user: user, privilege: privilege, on: kind + " " + display,
		fix: strings.ReplaceAll(fix, "{user}", pgx.Identifier{user}.Sanitize())}
}

// shapeError: the table is not one the sink can write.
type shapeError struct{ table, problem string }

func (e *shapeError) Error() string { return "table " + e.table + " " + e.problem }

// privilegeError: the user lacks a privilege the sink needs.
type privilegeError struct{ table, user, privilege, on, fix string }

func (e *privilegeError) Error() string {
	return fmt.Sprintf("table %s: the user %q lacks the %s privilege on %s (%s)", e.table, e.user, e.privilege, e.on, e.fix)
}

// isConfigError: an error no retry mends.
func isConfigError(err error) bool {
	var s *shapeError
	var p *privilegeError
	return errors.As(err, &s) || errors.As(err, &p)
}
