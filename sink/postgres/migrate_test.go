package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/internal/pgtest"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
)

func openInternal(t *testing.T, url string, log *slog.Logger) (*pgSink, error) {
	t.Helper()
	return openBuild(t, url, log, thisBuild)
}

// openBuild opens the sink as a build of schema ts would.
func openBuild(t *testing.T, url string, log *slog.Logger, ts tableSchema) (*pgSink, error) {
	t.Helper()
	return openSchema(context.Background(), url, sink.Options{Writer: "w", Logger: log}, ts)
}

// A later build that adds a column migrates a table made by an earlier
// one: the rows stay, the new version is recorded, and the earlier build
// then refuses the table rather than write rows it does not understand.
func TestForwardMigration(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDB(t)
	url := srv.URL(db, "table=papers")
	s, err := openInternal(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), []record.Record{{SchemaVersion: 1, ID: "1", Title: "kept"}}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	next := thisBuild.latest() + 1
	later := tableSchema{
		migrations: append(slices.Clone(migrations), migration{next, "test: add a column", "ALTER TABLE {t} ADD COLUMN added_later text"}),
		columns:    append(slices.Clone(columns), column{"added_later", "text", true}),
	}
	var logs bytes.Buffer
	s, err = openBuild(t, url, slog.New(slog.NewTextHandler(&logs, nil)), later)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Write(context.Background(), []record.Record{{SchemaVersion: 1, ID: "2", Title: "new"}})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), fmt.Sprintf("schema_versions_applied=[%d]", next)) {
		t.Errorf("the migration is not logged: %s", logs.String())
	}
	conn, err := srv.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var rows, versions int
	var title string
	if err := conn.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM papers), (SELECT count(*) FROM litcrawl_migrations WHERE table_name = 'papers'),
		(SELECT title FROM papers WHERE id = '1')`).Scan(&rows, &versions, &title); err != nil {
		t.Fatal(err)
	}
	if rows != 2 || versions != next || title != "kept" {
		t.Fatalf("after migrating: %d rows, %d versions, title %q", rows, versions, title)
	}

	_, err = openInternal(t, url, nil)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("schema version %d, made by a newer litcrawl", next)) || errors.Is(err, backoff.ErrRetryable) {
		t.Fatalf("an older build opening a newer table: %v", err)
	}
}

// Crawls that open a new table at once create it once.
func TestConcurrentFirstOpen(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDB(t)
	url := srv.URL(db, "table=papers")
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			s, err := openInternal(t, url, nil)
			if err != nil {
				errs <- err
				return
			}
			s.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// Records a hostile site could make, each past a limit of PostgreSQL's
// (an integer column, the 1 MB tsvector, a btree index row, the primary
// key's index), are stored all the same: one such record must not stop
// every later crawl at its page.
func TestHostileRecordsAreStored(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDB(t)
	s, err := openInternal(t, srv.URL(db, "table=papers"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var words strings.Builder
	for i := range 200000 {
		fmt.Fprintf(&words, "w%x ", i)
	}
	cites := 3000000000
	longID := strings.Repeat("7", 9000)
	recs := []record.Record{
		{SchemaVersion: 1, ID: "1", Title: "many citations", Citations: &cites, Zone: 1 << 40},
		{SchemaVersion: 1, ID: "2", Title: "a huge abstract", Abstract: words.String()},
		{SchemaVersion: 1, ID: "3", Title: "a long DOI", DOI: "10.1/" + strings.Repeat("x", 6000)},
		{SchemaVersion: 1, ID: longID, Title: "a long id"},
	}
	ctx := context.Background()
	if err := s.Write(ctx, recs); err != nil {
		t.Fatalf("hostile records: %v", err)
	}
	// Again: the long id's key is the same, so it is still one row.
	if err := s.Write(ctx, recs[3:]); err != nil {
		t.Fatal(err)
	}
	conn, err := srv.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var rows int
	var fullID string
	var c int64
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM papers), (SELECT record->>'id' FROM papers WHERE id LIKE '777%'),
		(SELECT citations FROM papers WHERE id = '1')`).Scan(&rows, &fullID, &c); err != nil {
		t.Fatal(err)
	}
	if rows != 4 || fullID != longID || c != int64(cites) {
		t.Fatalf("%d rows, long id kept whole in the record: %v, citations %d", rows, fullID == longID, c)
	}
	var id string
	if err := conn.QueryRow(ctx, "SELECT id FROM papers WHERE lower(doi) = lower($1)", recs[2].DOI).Scan(&id); err != nil || id != "3" {
		t.Fatalf("long DOI look-up: %q %v", id, err)
	}
}

// A batch larger than one statement takes is sent as several, in one
// transaction.
func TestLargeBatchInChunks(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDB(t)
	s, err := openInternal(t, srv.URL(db, "table=papers"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.maxChunk = 4096
	recs := make([]record.Record, 60)
	for i := range recs {
		recs[i] = record.Record{SchemaVersion: 1, ID: fmt.Sprint(i), Title: strings.Repeat("t", 200)}
	}
	chunks, _, err := rowsJSON(recs, s.maxChunk)
	if err != nil || len(chunks) < 3 {
		t.Fatalf("%d chunks, %v", len(chunks), err)
	}
	if err := s.Write(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	conn, _ := srv.Connect(context.Background(), db)
	defer conn.Close(context.Background())
	var n, commits int
	conn.QueryRow(context.Background(), "SELECT (SELECT count(*) FROM papers), (SELECT commits FROM litcrawl_writers)").Scan(&n, &commits)
	if n != 60 || commits != 1 {
		t.Fatalf("%d rows, %d commits; want 60 in one", n, commits)
	}
}

// A table made by a build of record schema 1 (migration 1 only) is taken
// to version 2 in place: its rows stay, and records of schema 2 fill the
// issue column.
func TestMigrationAddsIssue(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDB(t)
	url := srv.URL(db, "table=papers")
	schema1 := tableSchema{migrations: migrations[:1],
		columns: slices.DeleteFunc(slices.Clone(columns), func(c column) bool {
			return c.name == "issue" || c.name == "site_doi" || c.name == "revision" || c.name == "replaces"
		})}
	s, err := openBuild(t, url, nil, schema1)
	if err == nil {
		err = s.Write(context.Background(), []record.Record{
			{SchemaVersion: 1, ID: "1", Title: "old", Journal: &record.Journal{Volume: "8 1"}},
			{SchemaVersion: 1, ID: "3", Title: "old, early access", Journal: &record.Journal{Volume: "PP"}},
			{SchemaVersion: 1, ID: "4", Title: "old, supplement", Journal: &record.Journal{Volume: "12 Suppl 2"}},
		})
		s.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	s, err = openInternal(t, url, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Write(context.Background(), []record.Record{{SchemaVersion: 2, ID: "2", Title: "new", Journal: &record.Journal{Volume: "8", Issue: "1"}}})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "schema_versions_applied=\"[2 3 4]\"") && !strings.Contains(logs.String(), "schema_versions_applied=[2 3 4]") {
		t.Errorf("migration 2 is not logged: %s", logs.String())
	}
	conn, err := srv.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var oldVol, newVol, newIssue string
	var oldIssue *string
	if err := conn.QueryRow(context.Background(), `SELECT (SELECT volume FROM papers WHERE id = '1'), (SELECT issue FROM papers WHERE id = '1'),
		(SELECT volume FROM papers WHERE id = '2'), (SELECT issue FROM papers WHERE id = '2')`).Scan(&oldVol, &oldIssue, &newVol, &newIssue); err != nil {
		t.Fatal(err)
	}
	if oldVol != "8 1" || oldIssue != nil || newVol != "8" || newIssue != "1" {
		t.Fatalf("after migration 2: old row volume %q issue %v, new row volume %q issue %q", oldVol, oldIssue, newVol, newIssue)
	}

	// The docs' SQL brings old rows to what the parser now gives.
	runDocSQL(t, conn, "split the column in SQL")
	for id, want := range map[string][2]string{"1": {"8", "1"}, "3": {"", ""}, "4": {"12 Suppl 2", ""}} {
		var vol, iss *string
		if err := conn.QueryRow(context.Background(), "SELECT volume, issue FROM papers WHERE id = $1", id).Scan(&vol, &iss); err != nil {
			t.Fatal(err)
		}
		if deref(vol) != want[0] || deref(iss) != want[1] {
			t.Errorf("row %s after the docs' SQL: volume %v issue %v, want %q %q", id, deref(vol), deref(iss), want[0], want[1])
		}
	}
}

// A table filled by a build of record schema 2 (migrations 1 and 2) is
// taken to version 3 in place, and recognises its papers: an arXiv paper
// known by its DOI alone ("doi:arxiv-…") and one known by its site id
// are the same rows when this build delivers them again with arXiv's
// DOI, and a value that is no DOI fills site_doi, not doi.
func TestMigrationAddsSiteDOI(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDB(t)
	url := srv.URL(db, "table=papers")
	schema2 := tableSchema{migrations: migrations[:2],
		columns: slices.DeleteFunc(slices.Clone(columns), func(c column) bool { return c.name == "site_doi" || c.name == "revision" || c.name == "replaces" })}
	s, err := openBuild(t, url, nil, schema2)
	if err == nil {
		err = s.Write(context.Background(), []record.Record{
			{SchemaVersion: 2, ID: "doi:arxiv-2409.07232", DOI: "arxiv-2409.07232", ArxivID: "2409.07232", Title: "old, DOI only"},
			{SchemaVersion: 2, ID: "142263551", DOI: "arxiv-2409.08308", ArxivID: "2409.08308", Title: "old, site id"},
			{SchemaVersion: 2, ID: "142200001", DOI: "arXiv-2409.00001", ArxivID: "2409.00001", Title: "old, not delivered again"},
			{SchemaVersion: 2, ID: "142200002", DOI: "https://doi.org/10.1234/X.1", Title: "old, a resolver URL"},
			{SchemaVersion: 2, ID: "142200003", DOI: "CNKI:SUN:1", Title: "old, no DOI"},
		})
		s.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err = openInternal(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The same papers as this build's parser gives them.
	again := []record.Record{
		{SchemaVersion: 3, DOI: "10.48550/arXiv.2409.07232", Title: "new, DOI only"},
		{SchemaVersion: 3, ID: "142263551", DOI: "10.48550/arXiv.2409.08308", Title: "new, site id"},
		{SchemaVersion: 3, SiteDOI: "CNKI:SUN:X.0.2024-01-001", Title: "not a DOI"},
	}
	again[0].ID = record.DOIID(again[0].DOI)
	again[2].ID = record.DOIID(again[2].SiteDOI)
	err = s.Write(context.Background(), again)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := srv.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	var doi, title string
	var siteDOI, noDOI *string
	if err := conn.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM papers), (SELECT doi FROM papers WHERE id = 'doi:arxiv-2409.07232'),
		(SELECT title FROM papers WHERE id = 'doi:arxiv-2409.07232'), (SELECT site_doi FROM papers WHERE id = 'doi:cnki:sun:x.0.2024-01-001'),
		(SELECT doi FROM papers WHERE id = 'doi:cnki:sun:x.0.2024-01-001')`).Scan(&n, &doi, &title, &siteDOI, &noDOI); err != nil {
		t.Fatal(err)
	}
	if n != 6 || doi != "10.48550/arXiv.2409.07232" || title != "new, DOI only" || deref(siteDOI) != "CNKI:SUN:X.0.2024-01-001" || noDOI != nil {
		t.Fatalf("after migration 3: %d rows (want 6), doi %q title %q site_doi %v doi %v", n, doi, title, deref(siteDOI), noDOI)
	}

	// The docs' SQL gives rows not delivered again arXiv's DOI.
	runDocSQL(t, conn, "Rows written before migration 3")
	var oldDOI, oldURL string
	if err := conn.QueryRow(context.Background(), "SELECT doi, doi_url FROM papers WHERE id = '142200001'").Scan(&oldDOI, &oldURL); err != nil {
		t.Fatal(err)
	}
	if oldDOI != "10.48550/arXiv.2409.00001" || oldURL != "https://doi.org/10.48550/arXiv.2409.00001" {
		t.Errorf("after the docs' SQL: doi %q doi_url %q", oldDOI, oldURL)
	}
	var urlDOI, urlLink string
	var cnkiDOI, cnkiSite *string
	if err := conn.QueryRow(context.Background(), `SELECT (SELECT doi FROM papers WHERE id = '142200002'), (SELECT doi_url FROM papers WHERE id = '142200002'),
		(SELECT doi FROM papers WHERE id = '142200003'), (SELECT site_doi FROM papers WHERE id = '142200003')`).Scan(&urlDOI, &urlLink, &cnkiDOI, &cnkiSite); err != nil {
		t.Fatal(err)
	}
	if urlDOI != "10.1234/X.1" || urlLink != "https://doi.org/10.1234/X.1" || cnkiDOI != nil || deref(cnkiSite) != "CNKI:SUN:1" {
		t.Errorf("after the docs' SQL: %q %q, %v %q", urlDOI, urlLink, cnkiDOI, deref(cnkiSite))
	}
}

// runDocSQL runs the first SQL block of docs/postgres.md after marker.
func runDocSQL(t *testing.T, conn *pgx.Conn, marker string) {
	t.Helper()
	doc, err := os.ReadFile("../../docs/postgres.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)[strings.Index(string(doc), marker):]
	start := strings.Index(section, "```sql\n") + len("```sql\n")
	if _, err := conn.Exec(context.Background(), section[start:start+strings.Index(section[start:], "```")]); err != nil {
		t.Fatalf("the docs' SQL after %q: %v", marker, err)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// A table written by the build before revisions (schema 3) is migrated:
// a paper's next revision replaces its row, an earlier revision never
// does, and a paper that got its site id keeps one row, under it.
func TestMigrationAddsRevisions(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDB(t)
	url := srv.URL(db, "table=papers")
	schema3 := tableSchema{migrations: migrations[:3],
		columns: slices.DeleteFunc(slices.Clone(columns), func(c column) bool { return c.name == "revision" || c.name == "replaces" })}
	ctx := context.Background()
	s, err := openBuild(t, url, nil, schema3)
	if err == nil {
		err = s.Write(ctx, []record.Record{
			{SchemaVersion: 3, ID: "142263551", DOI: "10.1/a", Title: "Old title", Source: record.Source{FetchedAt: "2026-12-01T02:00:00Z"}},
			{SchemaVersion: 3, ID: "doi:10.1/b", DOI: "10.1/b", Title: "No JSON yet", Source: record.Source{FetchedAt: "2026-12-01T02:00:00Z"}},
		})
		s.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err = openInternal(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	write := func(recs ...record.Record) {
		t.Helper()
		if err := s.Write(ctx, recs); err != nil {
			t.Fatal(err)
		}
	}
	// Revision 2 of the first, fetched earlier than its row (an archive
	// replayed): a later revision wins whatever its fetch time.
	write(record.Record{SchemaVersion: 4, ID: "142263551", Revision: 2, Changed: []string{"title"}, DOI: "10.1/a", Title: "New title",
		Source: record.Source{FetchedAt: "2026-11-30T02:00:00Z"}},
		record.Record{SchemaVersion: 4, ID: "142263552", Revision: 2, Changed: []string{"id", "abstract"}, Replaces: "doi:10.1/b", DOI: "10.1/b",
			Title: "No JSON yet", Abstract: "Now with its JSON.", Source: record.Source{FetchedAt: "2026-12-02T02:00:00Z"}})
	// Revision 1 again, fetched later (a stream replayed): never back.
	write(record.Record{SchemaVersion: 4, ID: "142263551", Revision: 1, DOI: "10.1/a", Title: "Old title",
		Source: record.Source{FetchedAt: "2026-12-03T02:00:00Z"}})
	s.Close()
	conn, err := srv.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	var title string
	var rev, rev2 int
	var updated bool
	var abstract, replaces string
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM papers), title, revision, updated_at IS NOT NULL,
		(SELECT abstract FROM papers WHERE id = '142263552'), (SELECT revision FROM papers WHERE id = '142263552'),
		(SELECT replaces FROM papers WHERE id = '142263552') FROM papers WHERE id = '142263551'`).Scan(&n, &title, &rev, &updated, &abstract, &rev2, &replaces); err != nil {
		t.Fatal(err)
	}
	if n != 2 || title != "New title" || rev != 2 || !updated || abstract != "Now with its JSON." || rev2 != 2 || replaces != "doi:10.1/b" {
		t.Errorf("after the revisions: %d rows (want 2), title %q revision %d updated %v; the replacing row: %q revision %d replaces %q",
			n, title, rev, updated, abstract, rev2, replaces)
	}
}

// A paper's revision 1 under its doi: id and the revision that replaces
// it, in one write (one commit group met both): one row, the latest.
func TestReplacedInTheSameWrite(t *testing.T) {
	srv := pgtest.Shared(t)
	db := srv.NewDB(t)
	s, err := openInternal(t, srv.URL(db, "table=papers"), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Write(context.Background(), []record.Record{
		{SchemaVersion: 4, ID: "doi:10.1/x", Revision: 1, DOI: "10.1/x", Title: "No JSON"},
		{SchemaVersion: 4, ID: "777", Revision: 2, Replaces: "doi:10.1/x", Changed: []string{"id"}, DOI: "10.1/x", Title: "With JSON"},
	})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := srv.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	var id string
	if err := conn.QueryRow(context.Background(), "SELECT count(*), min(id) FROM papers").Scan(&n, &id); err != nil || n != 1 || id != "777" {
		t.Fatalf("%d rows, %q, %v; want the one row 777", n, id, err)
	}
}
