// Package postgres is the PostgreSQL sink driver:
// postgres://USER@HOST:PORT/DB?table=papers (postgresql:// alike, and
// postgres:///DB?host=/run/postgresql for a socket) upserts each record
// by id into a table made for querying, through pgx. Importing the package
// registers the driver.
//
// Each Write is one transaction: the batch is upserted and the writer's
// commit count (litcrawl_writers) goes up by one, so the count the crawl
// state stores as the sink's token and the rows in the table never
// disagree after a crash. A resend is harmless: a row is keyed by the
// paper's id.
package postgres

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
)

func init() {
	check := func(raw string) error { _, err := parseURL(raw); return err }
	usage := "postgres://USER@HOST:PORT/DB?table=papers"
	sink.Register(sink.Driver{Scheme: "postgres", Usage: usage, Check: check, Open: open})
	sink.Register(sink.Driver{Scheme: "postgresql", Usage: "postgresql://USER@HOST:PORT/DB?table=papers", Check: check, Open: open})
}

// minServer is the oldest server the sink takes: generated columns came
// with PostgreSQL 12.
const minServer = 120000

type pgSink struct {
	cfg    *config
	pool   *pgxpool.Pool
	n      names
	writer string
	log    *slog.Logger

	insertSQL, writerSQL string
	replacedSQL          string      // "" for a schema without replaces (tests play earlier builds)
	maxChunk             int         // bytes of JSON an INSERT takes (maxChunk; tests lower it)
	schema               tableSchema // the table's (thisBuild; tests play other builds)

	mu      sync.Mutex
	commits int64    // the writer's commit count after the last Write that committed
	last    []string // keys of rows that Write committed (some), checked by Restore

	sink.Gate // Writes hold it shared; Close exclusively
}

func open(ctx context.Context, raw string, opts sink.Options) (sink.Sink, error) {
	return openSchema(ctx, raw, opts, thisBuild)
}

// openSchema opens the sink over a table of schema ts.
func openSchema(ctx context.Context, raw string, opts sink.Options, ts tableSchema) (*pgSink, error) {
	cfg, err := parseURL(raw)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg.pool)
	if err != nil {
		return nil, fmt.Errorf("postgres %s: %s", cfg.description, cfg.scrub(err.Error()))
	}
	s := &pgSink{cfg: cfg, pool: pool, writer: opts.Writer, log: opts.Log(), maxChunk: maxChunk, schema: ts}
	if err := s.prepare(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// prepare checks the server, creates or migrates the table, checks its
// shape and the user's privileges, and reads the writer's commit count.
func (s *pgSink) prepare(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.timeout+time.Duration(defaultConnectTimeout)*time.Second)
	defer cancel()
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.fail(ctx, "connect", err)
	}
	defer c.Release()
	conn := c.Conn()
	var version int
	var fsync string
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int, current_setting('fsync')").Scan(&version, &fsync); err != nil {
		return s.fail(ctx, "read the server's version", err)
	}
	if version < minServer {
		return s.fail(ctx, "check the server", fmt.Errorf("PostgreSQL %d.%d is too old: the sink needs 12 or newer", version/10000, version%10000))
	}
	if s.cfg.schema == "" {
		var schema *string
		if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
			return s.fail(ctx, "find the schema", err)
		}
		if schema == nil {
			return s.fail(ctx, "find the schema", errors.New("the search_path names no schema that exists: give one, table=SCHEMA.TABLE"))
		}
		s.cfg.schema = *schema
	} else {
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", s.cfg.schema).Scan(&exists); err != nil {
			return s.fail(ctx, "find the schema", err)
		}
		if !exists {
			return s.fail(ctx, "find the schema", fmt.Errorf("schema %q does not exist (CREATE SCHEMA %s, or name another in table=SCHEMA.TABLE)", s.cfg.schema, s.cfg.schema))
		}
	}
	s.n = newNames(s.cfg.schema, s.cfg.table)
	s.insertSQL, s.writerSQL = upsertSQL(s.n, s.schema.columns), writerSQL(s.n)
	if slices.ContainsFunc(s.schema.columns, func(c column) bool { return c.name == "replaces" }) {
		s.replacedSQL = replacedSQL(s.n)
	}
	applied, err := migrate(ctx, conn, s.n, s.schema)
	if err != nil {
		return s.fail(ctx, opMigrate, err)
	}
	if err := checkShape(ctx, conn, s.n, s.schema); err != nil {
		return s.fail(ctx, "check the table", err)
	}
	if err := checkPrivileges(ctx, conn, s.n); err != nil {
		return s.fail(ctx, "check privileges", err)
	}
	if s.writer != "" {
		if s.commits, _, err = s.readCommits(ctx, conn); err != nil {
			return s.fail(ctx, "read the writer's commits", err)
		}
	}
	if fsync != "on" {
		s.log.Warn("postgres: the server runs with fsync off: a crash of the server can lose commits the crawl counts as delivered", "sink", s.Describe())
	}
	if len(applied) > 0 {
		s.log.Info("postgres: table made ready", "sink", s.Describe(), "table", s.n.display, "schema_versions_applied", fmt.Sprint(applied))
	}
	s.log.Debug("postgres sink open", "sink", s.Describe(), "server_version", version, "connection", s.cfg.tls)
	return nil
}

// readCommits is the writer's commit count, and whether the table of
// counts has a row for it.
func (s *pgSink) readCommits(ctx context.Context, conn *pgx.Conn) (n int64, found bool, err error) {
	err = conn.QueryRow(ctx, "SELECT commits FROM "+s.n.qWriters+" WHERE table_name = $1 AND writer = $2", s.n.table, s.writer).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return n, err == nil, err
}

func (s *pgSink) Describe() string { return s.cfg.description }

// TokenKey is what the sink's token is stored under: the database and
// the table, however the URL names the server (localhost or 127.0.0.1, a
// socket) or the table (with its schema or without): a token is checked
// whatever spelling the next run uses. Sinks fanned out to two servers
// with the same database and table share it, which holds since each
// takes every write.
func (s *pgSink) TokenKey() string {
	return "postgres:" + s.cfg.pool.ConnConfig.Database + "/" + s.n.display
}

// Write upserts the batch and counts the writer's commit in one
// transaction, sent in one round trip.
func (s *pgSink) Write(ctx context.Context, recs []record.Record) error {
	release, err := s.Enter(ctx, false)
	if err != nil {
		return err
	}
	defer release()
	if len(recs) == 0 {
		return nil
	}
	chunks, keys, err := rowsJSON(recs, s.maxChunk)
	if err != nil {
		return fmt.Errorf("postgres %s: %w", s.n.display, err)
	}
	// The timeout grows by a second a MiB, so that a large commit group
	// (a large page, crawl parse of a large file) is not failed for ever.
	size := 0
	for _, c := range chunks {
		size += len(c)
	}
	wctx, cancel := context.WithTimeout(ctx, s.cfg.timeout+time.Duration(size>>20)*time.Second)
	defer cancel()
	b := &pgx.Batch{}
	for _, c := range chunks {
		if s.replacedSQL != "" && bytes.Contains(c, []byte(`"replaces":`)) {
			b.Queue(s.replacedSQL, c)
		}
		b.Queue(s.insertSQL, c)
	}
	var commits int64
	if s.writer != "" {
		b.Queue(s.writerSQL, s.n.table, s.writer, recs[0].Source.RunID).QueryRow(func(row pgx.Row) error {
			return row.Scan(&commits)
		})
	}
	// The queued statements run as one implicit transaction, committed
	// (and, with synchronous_commit on, durable) when Close returns nil.
	if err := s.pool.SendBatch(wctx, b).Close(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return s.fail(wctx, fmt.Sprintf("write %d records", len(recs)), err)
	}
	s.mu.Lock()
	s.commits = max(s.commits, commits)
	s.last = keys[:min(len(keys), lastKept)]
	s.mu.Unlock()
	return nil
}

// pgToken is the sink's commit token: the writer's commit count after the
// last Write, in a table, and the keys of a few rows that Write
// committed.
type pgToken struct {
	Table   string   `json:"table"`
	Writer  string   `json:"writer,omitempty"`
	Commits int64    `json:"commits"`
	Last    []string `json:"last,omitempty"`
}

// lastKept is how many keys of the last Write a token keeps.
const lastKept = 8

func (s *pgSink) Token() ([]byte, error) {
	release, err := s.Enter(context.Background(), false)
	if err != nil {
		return nil, err
	}
	defer release()
	s.mu.Lock()
	defer s.mu.Unlock()
	return json.Marshal(pgToken{Table: s.n.display, Writer: s.writer, Commits: s.commits, Last: s.last})
}

// Restore checks the table against the crawl state's last token. Rows are
// never deleted: records written after the token (a crash between the
// table's commit and the state's) are written again by the rerun, and the
// upsert keeps each paper once. A table behind the token lost commits the
// state counts as delivered (dropped and made again, restored from an
// older backup, another database): that stops the crawl, since going on
// would leave those papers out for good.
func (s *pgSink) Restore(ctx context.Context, token []byte) error {
	var t pgToken
	if err := json.Unmarshal(token, &t); err != nil || t.Table == "" || t.Commits < 0 {
		return fmt.Errorf("postgres %s: restore: bad token %q", s.n.display, token)
	}
	release, err := s.Enter(ctx, true)
	if err != nil {
		return err
	}
	defer release()
	switch {
	case s.writer == "" || t.Writer == "":
		return nil // tokens not kept
	case t.Table != s.n.display:
		s.log.Warn("postgres: the stored commit token is of another table: left alone", "sink", s.Describe(), "token_table", t.Table)
		return nil
	case t.Writer != s.writer:
		s.log.Warn("postgres: the stored commit token is of another crawl state (writer): left alone", "sink", s.Describe(), "token_writer", t.Writer, "writer", s.writer)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	defer cancel()
	var commits int64
	var found bool
	var present int
	err = s.pool.AcquireFunc(ctx, func(c *pgxpool.Conn) (err error) {
		if commits, found, err = s.readCommits(ctx, c.Conn()); err != nil {
			return err
		}
		if len(t.Last) == 0 {
			return nil
		}
		return c.Conn().QueryRow(ctx, "SELECT count(*) FROM "+s.n.qTable+" WHERE id = ANY($1)", t.Last).Scan(&present)
	})
	if err != nil {
		return s.fail(ctx, "read the writer's commits", err)
	}
	if present < len(t.Last) {
		return &behindError{table: s.n.display, writer: s.writer,
			missing: fmt.Sprintf("%d of %d papers of the state's last commit are not in the table", len(t.Last)-present, len(t.Last))}
	}
	if !found && t.Commits > 0 && len(t.Last) > 0 {
		// The count is gone (litcrawl_writers emptied or made again), the
		// papers of the last commit are there: count on from the state's.
		err := s.pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
			_, err := c.Exec(ctx, "INSERT INTO "+s.n.qWriters+" (table_name, writer, commits) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
				s.n.table, s.writer, t.Commits)
			return err
		})
		if err != nil {
			return s.fail(ctx, "count the writer's commits again", err)
		}
		s.log.Warn("postgres: this crawl's commit count was gone from litcrawl_writers, its last commit's papers are in the table: counting on from the crawl state's",
			"sink", s.Describe(), "commits", t.Commits)
		commits = t.Commits
	}
	if commits < t.Commits {
		return &behindError{table: s.n.display, writer: s.writer,
			missing: fmt.Sprintf("the state's last commit counts %d commits of this crawl (writer %s) in the table, the table has %d", t.Commits, s.writer, commits)}
	}
	if commits > t.Commits {
		s.log.Info("postgres: the table has commits after the state's last (a crash came between them): their pages are delivered again and upserted, each paper kept once",
			"sink", s.Describe(), "commits_after", commits-t.Commits)
	}
	s.mu.Lock()
	s.commits = max(s.commits, commits)
	if len(s.last) == 0 {
		// Until this run writes, its tokens keep the checked rows: a run
		// that delivers nothing must not leave the next one without them.
		s.last = t.Last
	}
	s.mu.Unlock()
	return nil
}

// behindError: the table lost commits the crawl state counts.
type behindError struct {
	table, writer, missing string
}

func (e *behindError) Error() string {
	return fmt.Sprintf("postgres %s: the table is behind the crawl state: %s: "+
		"commits were lost (the table was emptied, dropped and made again, restored from an older backup, or the URL names another database), "+
		"so papers the state counts as delivered may be missing from it. Deliver them again with crawl backfill --journal J --pages A-B --no-resume --redeliver "+
		"over the pages concerned (such a run goes on past this check, and the upsert keeps each paper once), or start over with a new --state-dir",
		e.table, e.missing)
}

func (e *behindError) Unwrap() error { return sink.ErrBehind }

func (s *pgSink) Close() error {
	return s.Shut(func() error {
		s.pool.Close()
		return nil
	})
}

// upsertSQL inserts the rows of a JSON array (one object per row, keyed
// by column) and, for a paper already there, updates what the site says
// of it when that changed: to a later revision always, to the same
// revision unless the row holds a newer fetch, to an earlier one never
// (a row without a revision is revision 1). first_run and first_seen are
// never updated.
func upsertSQL(n names, columns []column) string {
	var cols, sel, set []string
	for _, c := range columns {
		switch c.name {
		case "search", "updated_at":
			continue
		case "first_run":
			cols, sel = append(cols, c.name), append(sel, "r.run")
		case "first_seen":
			cols, sel = append(cols, c.name), append(sel, "coalesce(r.fetched_at, pg_catalog.now())")
		default:
			cols, sel = append(cols, c.name), append(sel, "r."+c.name)
		}
		if c.content {
			set = append(set, c.name+" = EXCLUDED."+c.name)
		}
	}
	set = append(set, "updated_at = pg_catalog.now()")
	return "INSERT INTO " + n.qTable + " AS p (" + strings.Join(cols, ", ") + ")\n" +
		"SELECT " + strings.Join(sel, ", ") + "\nFROM pg_catalog.jsonb_populate_recordset(NULL::" + n.qTable + ", $1::jsonb) AS r ORDER BY r.id\n" +
		"ON CONFLICT (id) DO UPDATE SET " + strings.Join(set, ", ") + "\n" +
		"WHERE (p.record OPERATOR(pg_catalog.-) 'source'::pg_catalog.text) IS DISTINCT FROM (EXCLUDED.record OPERATOR(pg_catalog.-) 'source'::pg_catalog.text)\n" +
		keepsSQL(columns)
}

// keepsSQL is the upsert's rule of which content a row keeps: a later
// revision's, else the later fetch's (a schema before revisions: the
// later fetch's).
func keepsSQL(columns []column) string {
	const fetch = "(p.fetched_at IS NULL OR EXCLUDED.fetched_at IS NULL OR EXCLUDED.fetched_at >= p.fetched_at)"
	if !slices.ContainsFunc(columns, func(c column) bool { return c.name == "revision" }) {
		return "  AND " + fetch
	}
	return "  AND (coalesce(EXCLUDED.revision, 1) > coalesce(p.revision, 1)\n" +
		"    OR coalesce(EXCLUDED.revision, 1) = coalesce(p.revision, 1) AND " + fetch + ")"
}

// replacedSQL moves the row of the id a record replaces (a paper first
// delivered without its JSON, id "doi:…", now under its site id) to the
// record's id, before the upsert updates it: one row a paper, keeping its
// first_run and first_seen, with the UPDATE privilege the sink has. When
// a row of the new id is there already, the old row stays.
func replacedSQL(n names) string {
	return "UPDATE " + n.qTable + " AS p SET id = r.id\n" +
		"FROM pg_catalog.jsonb_populate_recordset(NULL::" + n.qTable + ", $1::jsonb) AS r\n" +
		"WHERE r.replaces IS NOT NULL AND p.id = r.replaces AND r.replaces <> r.id\n" +
		"  AND NOT EXISTS (SELECT 1 FROM " + n.qTable + " AS q WHERE q.id = r.id)"
}

// writerSQL counts one commit of a writer and returns its count.
func writerSQL(n names) string {
	return "INSERT INTO " + n.qWriters + " AS w (table_name, writer, commits, last_run) VALUES ($1, $2, 1, $3)\n" +
		"ON CONFLICT (table_name, writer) DO UPDATE SET commits = w.commits + 1, last_run = EXCLUDED.last_run, updated_at = pg_catalog.now()\n" +
		"RETURNING commits"
}

// row is one record as the table's columns (JSON keys are column names).
type row struct {
	ID              string          `json:"id"`
	DOI             string          `json:"doi,omitempty"`
	DOIURL          string          `json:"doi_url,omitempty"`
	ArxivID         string          `json:"arxiv_id,omitempty"`
	URL             string          `json:"url,omitempty"`
	Title           string          `json:"title,omitempty"`
	TitleCN         string          `json:"title_cn,omitempty"`
	Authors         []string        `json:"authors,omitempty"`
	Abstract        string          `json:"abstract,omitempty"`
	AbstractCN      string          `json:"abstract_cn,omitempty"`
	Published       string          `json:"published,omitempty"` // a date, or absent
	JournalID       int64           `json:"journal_id,omitempty"`
	JournalName     string          `json:"journal_name,omitempty"`
	Volume          string          `json:"volume,omitempty"`
	Issue           string          `json:"issue,omitempty"`
	Pages           string          `json:"pages,omitempty"`
	ImpactFactor    float64         `json:"impact_factor,omitempty"`
	Zone            int             `json:"zone,omitempty"`
	Subject         string          `json:"subject,omitempty"`
	JCRQuartile     string          `json:"jcr_quartile,omitempty"`
	JCRCategory     string          `json:"jcr_category,omitempty"`
	Citations       *int            `json:"citations,omitempty"`
	OpenAccessPDF   string          `json:"open_access_pdf,omitempty"`
	PublicationType string          `json:"publication_type,omitempty"`
	Warnings        []string        `json:"warnings,omitempty"`
	SchemaVersion   int             `json:"schema_version"`
	SourceURL       string          `json:"source_url,omitempty"`
	SourcePage      int             `json:"source_page,omitempty"`
	SourcePosition  int             `json:"source_position,omitempty"`
	Run             string          `json:"run,omitempty"`
	FetchedAt       string          `json:"fetched_at,omitempty"` // RFC 3339, or absent
	Record          json.RawMessage `json:"record"`
	SiteDOI         string          `json:"site_doi,omitempty"`
	Revision        int             `json:"revision,omitempty"`
	Replaces        string          `json:"replaces,omitempty"`
}

// maxChunk bounds the JSON of one INSERT statement: a batch of larger
// pages is sent as several statements, in the same transaction.
const maxChunk = 32 << 20

// rowsJSON is the batch as JSON arrays of rows (one per statement, each
// at most max bytes unless one row is larger): a paper given twice is kept
// once (its last), rows in key order so that concurrent writers lock rows
// in one order. keys are the rows' keys.
func rowsJSON(recs []record.Record, max int) (chunks [][]byte, keys []string, err error) {
	last := make(map[string]int, len(recs))
	for i := range recs {
		last[rowKey(recs[i].ID)] = i
	}
	// A paper's revision 1 and the revision that replaces its id, in one
	// batch: the row is the replacing one's alone (replacedSQL moves a row
	// written before the batch).
	for i := range recs {
		if r := recs[i].Replaces; r != "" && rowKey(r) != rowKey(recs[i].ID) {
			if j, ok := last[rowKey(r)]; ok && j < i {
				delete(last, rowKey(r))
			}
		}
	}
	keys = make([]string, 0, len(last))
	for k := range last {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var buf []byte
	for _, k := range keys {
		r := &recs[last[k]]
		data, err := sink.Marshal(r)
		if err != nil {
			return nil, nil, err
		}
		// PostgreSQL's text and jsonb hold no NUL (invalid UTF-8 is
		// replaced by the JSON encoder). A false alarm (a text with a
		// backslash before u0000) costs a cleaning that changes nothing.
		if bytes.Contains(data, []byte(`\u0000`)) {
			c := clean(*r)
			r = &c
			if data, err = sink.Marshal(r); err != nil {
				return nil, nil, err
			}
		}
		row, err := json.Marshal(toRow(k, r, data))
		if err != nil {
			return nil, nil, err
		}
		if len(buf) > 0 && len(buf)+len(row) > max {
			chunks = append(chunks, append(buf, ']'))
			buf = nil
		}
		if len(buf) == 0 {
			buf = append(buf, '[')
		} else {
			buf = append(buf, ',')
		}
		buf = append(buf, row...)
	}
	if len(buf) > 0 {
		chunks = append(chunks, append(buf, ']'))
	}
	return chunks, keys, nil
}

// maxKey is the longest record id kept as it is as the row's key; a
// longer one (no site id is; a hostile page could make one) would not fit
// the primary key's index, and is keyed by its start and its SHA-256 (the
// record column keeps it whole).
const maxKey = 1024

func rowKey(id string) string {
	if len(id) <= maxKey {
		return id
	}
	cut := 960
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	sum := sha256.Sum256([]byte(id))
	return id[:cut] + "…sha256:" + hex.EncodeToString(sum[:])
}

func toRow(key string, r *record.Record, data []byte) row {
	w := row{ID: key, DOI: r.DOI, DOIURL: r.DOIURL, SiteDOI: r.SiteDOI, ArxivID: r.ArxivID, URL: r.URL, Title: r.Title, TitleCN: r.TitleCN,
		Authors: r.Authors, Abstract: r.Abstract, AbstractCN: r.AbstractCN, ImpactFactor: r.ImpactFactor, Zone: r.Zone,
		Subject: r.Subject, JCRQuartile: r.JCRQuartile, JCRCategory: r.JCRCategory, Citations: r.Citations,
		OpenAccessPDF: r.OpenAccessPDF, PublicationType: r.PublicationType, Warnings: r.Warnings,
		SchemaVersion: r.SchemaVersion, SourceURL: r.Source.URL, SourcePage: r.Source.Page,
		SourcePosition: r.Source.Position, Run: r.Source.RunID, Record: data, Revision: r.Revision}
	if r.Replaces != "" && rowKey(r.Replaces) != key {
		w.Replaces = rowKey(r.Replaces)
	}
	if d, err := time.Parse(time.DateOnly, r.Published); err == nil && d.Year() >= 1 {
		w.Published = r.Published
	}
	if r.Journal != nil {
		w.JournalID, w.JournalName, w.Volume, w.Issue, w.Pages = r.Journal.ID, r.Journal.Name, r.Journal.Volume, r.Journal.Issue, r.Journal.Pages
	}
	if t, err := time.Parse(time.RFC3339Nano, r.Source.FetchedAt); err == nil && t.Year() >= 1 && t.Year() <= 9999 {
		w.FetchedAt = t.UTC().Format(time.RFC3339Nano)
	}
	return w
}

// clean is a copy of r with NUL and invalid UTF-8 replaced by U+FFFD.
func clean(r record.Record) record.Record {
	r.Authors, r.Warnings = slices.Clone(r.Authors), slices.Clone(r.Warnings)
	if r.Journal != nil {
		j := *r.Journal
		r.Journal = &j
	}
	eachString(reflect.ValueOf(&r).Elem(), func(v reflect.Value) {
		s := strings.ToValidUTF8(v.String(), "\uFFFD")
		v.SetString(strings.ReplaceAll(s, "\x00", "\uFFFD"))
	})
	return r
}

// eachString calls f on every string reachable from v (fields, slices,
// pointers).
func eachString(v reflect.Value, f func(reflect.Value)) {
	switch v.Kind() {
	case reflect.String:
		f(v)
	case reflect.Pointer:
		if !v.IsNil() {
			eachString(v.Elem(), f)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			eachString(v.Field(i), f)
		}
	case reflect.Slice:
		for i := range v.Len() {
			eachString(v.Index(i), f)
		}
	}
}
