package postgres_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/internal/pgtest"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
	_ "github.com/litcrawl/litcrawl/sink/postgres"
	"github.com/litcrawl/litcrawl/sink/sinktest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

var bg = context.Background()

// openSink opens url as writer, failing the test if it cannot.
func openSink(t testing.TB, url, writer string) sink.Sink {
	t.Helper()
	s, err := sink.Open(bg, url, sink.Options{Writer: writer})
	if err != nil {
		t.Fatalf("Open(%s): %v", url, err)
	}
	return s
}

// readRecords reads the record column of a table, in id order.
func readRecords(t testing.TB, srv *pgtest.Server, db, table string) []record.Record {
	t.Helper()
	conn, err := srv.Connect(bg, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(bg)
	rows, err := conn.Query(bg, "SELECT record FROM "+table+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (record.Record, error) {
		var data []byte
		var rec record.Record
		if err := r.Scan(&data); err != nil {
			return rec, err
		}
		return rec, json.Unmarshal(data, &rec)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rawRecords reads the record column as the server prints it.
func rawRecords(t *testing.T, srv *pgtest.Server, db string) [][]byte {
	t.Helper()
	conn, err := srv.Connect(bg, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(bg)
	rows, err := conn.Query(bg, "SELECT record::text FROM papers ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]byte, error) {
		var s string
		err := r.Scan(&s)
		return []byte(s), err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func queryRow(t testing.TB, srv *pgtest.Server, db, sql string, dst ...any) {
	t.Helper()
	conn, err := srv.Connect(bg, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(bg)
	if err := conn.QueryRow(bg, sql).Scan(dst...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func exec(t testing.TB, srv *pgtest.Server, db, sql string) {
	t.Helper()
	if err := srv.Exec(bg, db, sql); err != nil {
		t.Fatal(err)
	}
}

// The conformance suite: records come back as written, concurrent
// writers lose nothing, Close and cancellation behave, a restore after a
// crash and a resend leave each record once.
func TestConformance(t *testing.T) {
	srv := pgtest.Shared(t)
	sinktest.Run(t, func(t *testing.T) sinktest.Destination {
		db := srv.NewDB(t)
		url := srv.URL(db, "table=papers")
		return sinktest.Destination{
			Open: func(t *testing.T) sink.Sink { return openSink(t, url, "writer-"+db) },
			Read: func(t *testing.T) []record.Record { return readRecords(t, srv, db, "papers") },
			Raw:  func(t *testing.T) [][]byte { return rawRecords(t, srv, db) },
		}
	}, sinktest.Features{Restore: true, DedupeByID: true, Latest: true, Reencoded: true, Refuse: func(id string) record.Record {
		r := sinktest.Records(id, 1)[0]
		r.ID = id + "\x00" // the row's key: a NUL that PostgreSQL refuses (22P05)
		return r
	}})
}

// A record lands in typed columns, with the whole record as jsonb; the
// indexes are there, and the search column holds the abstract's words.
// (The docs' example queries: TestDocsExampleQueries in cmd/crawl.)
func TestColumns(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDB(t)
	s := openSink(t, srv.URL(db, "table=papers"), "w1")
	cites := 7
	r := record.Record{SchemaVersion: record.SchemaVersion, ID: "93817261", DOI: "10.1016/j.cell.2024.01.002",
		DOIURL: "https://doi.org/10.1016/j.cell.2024.01.002", Title: "Graph neural networks for protein folding",
		TitleCN: "用于蛋白质折叠的图神经网络", Authors: []string{"Ann Lee", "Théo Pierron"},
		Abstract: "We fold proteins with message passing over residue graphs.", Published: "2024-03-05",
		Journal: &record.Journal{ID: 501422, Name: "Cell", Volume: "187", Issue: "4", Pages: "1-12"}, ImpactFactor: 45.5, Zone: 1,
		Citations: &cites, Warnings: []string{record.WarnNoJSON},
		Source: record.Source{URL: "https://site.example/p/1", Page: 1, Position: 3, FetchedAt: "2024-03-06T01:02:03Z", RunID: "run-a"}}
	if err := s.Write(bg, []record.Record{r}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	var (
		authors                  []string
		published                time.Time
		journalID                int64
		impact                   float64
		zone                     int16
		citations                int32
		firstRun, run            string
		firstSeen, fetchedAt     time.Time
		updatedAt                *time.Time
		schemaVersion, position  int32
		warnings                 []string
		titleCN, volume, journal string
		issue                    string
	)
	queryRow(t, srv, db, `SELECT authors, published, journal_id, impact_factor, zone, citations, first_run, run,
		first_seen, fetched_at, updated_at, schema_version, source_position, warnings, title_cn, volume, journal_name, issue
		FROM papers WHERE id = '93817261'`,
		&authors, &published, &journalID, &impact, &zone, &citations, &firstRun, &run, &firstSeen, &fetchedAt,
		&updatedAt, &schemaVersion, &position, &warnings, &titleCN, &volume, &journal, &issue)
	if !slices.Equal(authors, r.Authors) || published.Format(time.DateOnly) != "2024-03-05" || journalID != 501422 ||
		impact != 45.5 || zone != 1 || citations != 7 || firstRun != "run-a" || run != "run-a" ||
		!firstSeen.Equal(time.Date(2024, 3, 6, 1, 2, 3, 0, time.UTC)) || !fetchedAt.Equal(firstSeen) || updatedAt != nil ||
		schemaVersion != record.SchemaVersion || position != 3 || !slices.Equal(warnings, r.Warnings) || titleCN != r.TitleCN ||
		volume != "187" || issue != "4" || journal != "Cell" {
		t.Fatalf("columns: authors %v published %v journal %d if %v zone %d cites %d first_run %s run %s first_seen %v fetched %v updated %v v%d pos %d warn %v %s %s/%s %s",
			authors, published, journalID, impact, zone, citations, firstRun, run, firstSeen, fetchedAt, updatedAt,
			schemaVersion, position, warnings, titleCN, volume, issue, journal)
	}
	got := readRecords(t, srv, db, "papers")
	if len(got) != 1 || !reflectEqualJSON(got[0], r) {
		t.Fatalf("record column = %+v, want %+v", got, r)
	}

	for _, idx := range []string{"papers_doi_idx", "papers_journal_published_idx", "papers_search_idx"} {
		var n int
		queryRow(t, srv, db, "SELECT count(*) FROM pg_indexes WHERE indexname = '"+idx+"'", &n)
		if n != 1 {
			t.Errorf("index %s is missing", idx)
		}
	}
	var id string
	queryRow(t, srv, db, `SELECT id FROM papers WHERE search @@ websearch_to_tsquery('english', 'protein "message passing"')`, &id)
	if id != r.ID {
		t.Errorf("full-text search over the abstract: %q", id)
	}
}

func reflectEqualJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// The upsert: a known paper keeps its first_run and first_seen; changed
// fields from a newer fetch are taken and updated_at set; the same fields
// again change nothing; an older fetch does not overwrite a newer one.
func TestUpsertPolicy(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDB(t)
	s := openSink(t, srv.URL(db, "table=papers"), "w1")
	defer s.Close()
	rec := func(title, run, fetched string, pos int) record.Record {
		return record.Record{SchemaVersion: 1, ID: "42", Title: title, DOI: "10.1/x",
			Source: record.Source{Position: pos, RunID: run, FetchedAt: fetched}}
	}
	write := func(r record.Record) {
		t.Helper()
		if err := s.Write(bg, []record.Record{r}); err != nil {
			t.Fatal(err)
		}
	}
	state := func() (title, firstRun, run string, updated *time.Time) {
		t.Helper()
		queryRow(t, srv, db, "SELECT title, first_run, run, updated_at FROM papers WHERE id = '42'", &title, &firstRun, &run, &updated)
		return
	}
	// A look-alike operator a user put in public is not the upsert's.
	exec(t, srv, db, `CREATE FUNCTION public.jsonb_minus_jsonb(a jsonb, b jsonb) RETURNS jsonb LANGUAGE sql AS 'SELECT NULL::jsonb';
		CREATE OPERATOR public.- (LEFTARG = jsonb, RIGHTARG = jsonb, FUNCTION = public.jsonb_minus_jsonb)`)
	write(rec("Old title", "run-1", "2024-01-01T00:00:00Z", 1))
	write(rec("Fixed title", "run-2", "2024-01-02T00:00:00Z", 5))
	title, first, run, upd := state()
	if title != "Fixed title" || first != "run-1" || run != "run-2" || upd == nil {
		t.Fatalf("after a change: title %q first_run %s run %s updated_at %v", title, first, run, upd)
	}
	// Same fields (only where it was seen differs): nothing changes.
	write(rec("Fixed title", "run-3", "2024-01-03T00:00:00Z", 9))
	title2, _, run2, upd2 := state()
	if title2 != title || run2 != "run-2" || !upd2.Equal(*upd) {
		t.Fatalf("an unchanged paper was rewritten: run %s updated_at %v (was %v)", run2, upd2, upd)
	}
	// An older fetch with other text does not win.
	write(rec("Stale title", "run-0", "2023-12-31T00:00:00Z", 2))
	if title3, _, _, _ := state(); title3 != "Fixed title" {
		t.Fatalf("an older fetch overwrote a newer one: %q", title3)
	}
}

// One batch may carry a paper twice (a redelivery): it lands once, as its
// last copy. Text PostgreSQL cannot store (NUL) is replaced, and a date
// that is not one is NULL in the date column but kept in the record.
func TestOddRecords(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDB(t)
	s := openSink(t, srv.URL(db, "table=papers"), "w1")
	defer s.Close()
	a := record.Record{SchemaVersion: 1, ID: "1", Title: "first copy"}
	b := record.Record{SchemaVersion: 1, ID: "1", Title: "second copy"}
	c := record.Record{SchemaVersion: 1, ID: "2", Title: "nul\x00inside", Published: "2024-02-30", Authors: []string{"A\x00B"},
		Source: record.Source{FetchedAt: "not a time"}}
	if err := s.Write(bg, []record.Record{a, b, c}); err != nil {
		t.Fatal(err)
	}
	var title, title2, pubJSON string
	var authors []string
	var published, fetched *time.Time
	queryRow(t, srv, db, "SELECT p1.title, p2.title, p2.authors, p2.published, p2.fetched_at, p2.record->>'published' FROM papers p1, papers p2 WHERE p1.id = '1' AND p2.id = '2'",
		&title, &title2, &authors, &published, &fetched, &pubJSON)
	if title != "second copy" || title2 != "nul\uFFFDinside" || authors[0] != "A\uFFFDB" || published != nil || fetched != nil || pubJSON != "2024-02-30" {
		t.Fatalf("title %q, title2 %q, authors %q, published %v, fetched %v, record.published %q", title, title2, authors, published, fetched, pubJSON)
	}
}

// Two crawls (two writers) writing into one table at once lose nothing,
// and each one's commit count is its own.
func TestTwoWritersOneTable(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDB(t)
	url := srv.URL(db, "table=papers")
	s1, s2 := openSink(t, url, "crawl-a"), openSink(t, url, "crawl-b")
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i, s := range []sink.Sink{s1, s2} {
		wg.Go(func() {
			for p := range 25 {
				// Both crawls also meet the papers they share.
				batch := append(sinktest.Records(fmt.Sprintf("c%d-p%d", i, p), 20), sinktest.Records(fmt.Sprintf("shared-p%d", p), 2)...)
				if err := s.Write(bg, batch); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, s := range []sink.Sink{s1, s2} {
		tok, err := s.(sink.Committer).Token()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(tok), `"commits":25`) {
			t.Errorf("writer %d token %s, want 25 commits", i, tok)
		}
		s.Close()
	}
	var n, writers int
	queryRow(t, srv, db, "SELECT count(*), (SELECT count(*) FROM litcrawl_writers) FROM papers", &n, &writers)
	if n != 2*25*20+25*2 || writers != 2 {
		t.Fatalf("%d rows and %d writers, want %d and 2", n, writers, 2*25*20+25*2)
	}
}

// Restore never deletes a row. A table ahead of the token (the crash came
// between the table's commit and the state's) is fine; a table behind it
// lost commits the state counts as delivered: Restore refuses, saying
// what happened and what to do.
func TestRestoreAheadAndBehind(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDB(t)
	url := srv.URL(db, "table=papers")
	s := openSink(t, url, "w1")
	if err := s.Write(bg, sinktest.Records("a", 3)); err != nil {
		t.Fatal(err)
	}
	tok, _ := s.(sink.Committer).Token()
	if err := s.Write(bg, sinktest.Records("b", 3)); err != nil {
		t.Fatal(err)
	}
	ahead, _ := s.(sink.Committer).Token()
	s.Close()

	var logs bytes.Buffer
	s2, err := sink.Open(bg, url, sink.Options{Writer: "w1", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.(sink.Restorer).Restore(bg, tok); err != nil {
		t.Fatalf("restore to an earlier token: %v", err)
	}
	if !strings.Contains(logs.String(), "commits_after=1") {
		t.Errorf("no word of the commit after the token: %s", logs.String())
	}
	s2.Close()
	if n := len(readRecords(t, srv, db, "papers")); n != 6 {
		t.Fatalf("restore deleted rows: %d left, want 6", n)
	}

	// The table lost a commit (restored from a backup taken between
	// the two): the state is ahead of it.
	exec(t, srv, db, "UPDATE litcrawl_writers SET commits = 1")
	s3 := openSink(t, url, "w1")
	defer s3.Close()
	err = s3.(sink.Restorer).Restore(bg, ahead)
	if err == nil || !strings.Contains(err.Error(), "behind the crawl state") || !strings.Contains(err.Error(), "--redeliver") {
		t.Fatalf("restore with a table behind the state = %v", err)
	}
	if errors.Is(err, backoff.ErrRetryable) || !errors.Is(err, sink.ErrBehind) {
		t.Error("a table behind the state is retryable, or not sink.ErrBehind")
	}
	if err := s3.(sink.Restorer).Restore(bg, []byte("{bad")); err == nil {
		t.Error("a bad token was taken")
	}
	// Another writer's token (a state copied elsewhere) is left alone.
	other, _ := json.Marshal(map[string]any{"table": "public.papers", "writer": "w2", "commits": 99})
	if err := s3.(sink.Restorer).Restore(bg, other); err != nil {
		t.Errorf("another writer's token: %v", err)
	}
}

// A sink without a writer (a fleet worker, crawl parse) keeps no count:
// its rows are upserted all the same.
func TestNoWriter(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDB(t)
	s := openSink(t, srv.URL(db, "table=papers"), "")
	if err := s.Write(bg, sinktest.Records("x", 4)); err != nil {
		t.Fatal(err)
	}
	tok, _ := s.(sink.Committer).Token()
	s.Close()
	if strings.Contains(string(tok), "writer") {
		t.Errorf("token without a writer names one: %s", tok)
	}
	s2 := openSink(t, srv.URL(db, "table=papers"), "")
	if err := s2.(sink.Restorer).Restore(bg, tok); err != nil {
		t.Errorf("restore of a token without a writer: %v", err)
	}
	s2.Close()
	var writers, rows int
	queryRow(t, srv, db, "SELECT (SELECT count(*) FROM litcrawl_writers), (SELECT count(*) FROM papers)", &writers, &rows)
	if writers != 0 || rows != 4 {
		t.Fatalf("%d writers, %d rows; want 0 and 4", writers, rows)
	}
}

// A table emptied by hand keeps its commit counts, but not the papers of
// the state's last commit: Restore finds it behind, whatever spelling of
// the same server and table the next run uses (the token is keyed on the
// database and the table).
func TestRestoreFindsEmptiedTable(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDB(t)
	url := srv.URL(db, "table=papers")
	s := openSink(t, url, "w1")
	if err := s.Write(bg, sinktest.Records("a", 12)); err != nil {
		t.Fatal(err)
	}
	tok, _ := s.(sink.Committer).Token()
	key := s.(sink.TokenKeyer).TokenKey()
	s.Close()
	// A run that writes nothing keeps the rows to check in its token.
	quiet := openSink(t, url, "w1")
	if err := quiet.(sink.Restorer).Restore(bg, tok); err != nil {
		t.Fatal(err)
	}
	tok2, _ := quiet.(sink.Committer).Token()
	quiet.Close()
	if string(tok2) != string(tok) {
		t.Fatalf("a run that wrote nothing changed the token: %s, was %s", tok2, tok)
	}
	exec(t, srv, db, "TRUNCATE papers")
	other := fmt.Sprintf("postgres://postgres@localhost:%d/%s?table=public.papers", srv.Port, db)
	s2 := openSink(t, other, "w1")
	defer s2.Close()
	if k := s2.(sink.TokenKeyer).TokenKey(); k != key {
		t.Fatalf("token keys differ for one table: %q and %q", key, k)
	}
	err := s2.(sink.Restorer).Restore(bg, tok2)
	if err == nil || !errors.Is(err, sink.ErrBehind) || !strings.Contains(err.Error(), "8 of 8 papers of the state's last commit are not in the table") {
		t.Fatalf("restore after TRUNCATE: %v", err)
	}
}
