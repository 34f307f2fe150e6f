package postgres

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/litcrawl/litcrawl/internal/pgtest"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
)

func openInternal(t *testing.T, url string, log *slog.Logger) (*pgSink, error) {
	t.Helper()
	s, err := open(context.Background(), url, sink.Options{Writer: "w", Logger: log})
	if err != nil {
		return nil, err
	}
	return s.(*pgSink), nil
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

	saved, savedCols := migrations, columns
	migrations = append(migrations[:len(migrations):len(migrations)], migration{2, "test: add a column",
		"ALTER TABLE {t} ADD COLUMN added_later text"})
	columns = append(columns[:len(columns):len(columns)], column{"added_later", "text", true})
	var logs bytes.Buffer
	s, err = openInternal(t, url, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		migrations, columns = saved, savedCols
		t.Fatal(err)
	}
	err = s.Write(context.Background(), []record.Record{{SchemaVersion: 1, ID: "2", Title: "new"}})
	s.Close()
	migrations, columns = saved, savedCols
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "schema_versions_applied=[2]") {
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
	if rows != 2 || versions != 2 || title != "kept" {
		t.Fatalf("after migrating: %d rows, %d versions, title %q", rows, versions, title)
	}

	_, err = openInternal(t, url, nil)
	if err == nil || !strings.Contains(err.Error(), "schema version 2, made by a newer litcrawl") || errors.Is(err, sink.ErrRetryable) {
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
