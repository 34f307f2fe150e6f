package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/litcrawl/litcrawl/internal/pgtest"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
	_ "github.com/litcrawl/litcrawl/sink/jsonl"
)

// BenchmarkWrite: records per second for pages of 20 records (one Write
// per page, as the crawler delivers) of realistic size (a 1,200-character
// abstract), beside JSONL, on a server with fsync and synchronous_commit
// on. Sub-benchmarks run in turn, so -count N interleaves them:
//
//		go test -run '^$' -bench Write -benchtime 3s -count 5 ./sink/postgres
//
//	  - jsonl: the JSONL sink (write + fsync per page)
//	  - postgres: the sink as shipped (every index)
//	  - postgres-no-fulltext: the same without the search column and its index
//	  - copy-then-upsert: the alternative not taken, COPY into a temporary
//	    table then INSERT … ON CONFLICT, in one transaction
func BenchmarkWrite(b *testing.B) {
	srv := pgtest.Shared(b)
	b.Run("jsonl", func(b *testing.B) {
		s, err := sink.Open(context.Background(), "jsonl:"+filepath.Join(b.TempDir(), "p.jsonl"), sink.Options{})
		if err != nil {
			b.Fatal(err)
		}
		benchPages(b, s)
	})
	b.Run("postgres", func(b *testing.B) {
		db := srv.NewDB(b)
		benchPages(b, benchOpen(b, srv.URL(db, "table=papers")))
	})
	b.Run("postgres-no-fulltext", func(b *testing.B) {
		db := srv.NewDB(b)
		s := benchOpen(b, srv.URL(db, "table=papers"))
		if err := srv.Exec(context.Background(), db, "DROP INDEX papers_search_idx; ALTER TABLE papers DROP COLUMN search"); err != nil {
			b.Fatal(err)
		}
		benchPages(b, s)
	})
	b.Run("copy-then-upsert", func(b *testing.B) {
		db := srv.NewDB(b)
		s := benchOpen(b, srv.URL(db, "table=papers")).(*pgSink)
		benchPages(b, &copySink{s})
	})
}

func benchOpen(b *testing.B, url string) sink.Sink {
	s, err := open(context.Background(), url, sink.Options{Writer: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func benchPages(b *testing.B, s sink.Sink) {
	defer s.Close()
	ctx := context.Background()
	pages := 0
	for b.Loop() {
		if err := s.Write(ctx, realistic(pages, 20)); err != nil {
			b.Fatal(err)
		}
		pages++
	}
	b.ReportMetric(float64(pages*20)/b.Elapsed().Seconds(), "records/s")
}

var words = strings.Fields(`graph neural network protein folding residue message passing attention transformer
	sequence structure prediction energy landscape molecular dynamics simulation sampling diffusion model contrastive
	learning representation benchmark dataset evaluation clinical cohort patient outcome survival analysis genome
	expression regulation cell signalling pathway inhibitor binding affinity ligand receptor kinase mutation variant`)

// realistic makes n records of page p, the size of the site's: a title,
// a Chinese title, five authors, a DOI, a journal and a long abstract.
func realistic(p, n int) []record.Record {
	rng := rand.New(rand.NewPCG(uint64(p), 7))
	text := func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = words[rng.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
	out := make([]record.Record, n)
	for i := range out {
		id := fmt.Sprint(90000000 + p*n + i)
		out[i] = record.Record{SchemaVersion: record.SchemaVersion, ID: id, DOI: "10.1016/j.bench.2024." + id,
			DOIURL: "https://doi.org/10.1016/j.bench.2024." + id, Title: text(12), TitleCN: "基于图神经网络的蛋白质结构预测研究",
			Authors: []string{"Ann Lee", "Théo Pierron", "Wei Zhang", "Maria Garcia", "John Smith"}, Abstract: text(170),
			Published: "2024-03-05", Journal: &record.Journal{ID: int64(500000 + p%50), Name: "Bench Journal", Volume: "12", Pages: "100-110"},
			ImpactFactor: 7.25, Zone: 2, Source: record.Source{URL: "https://site.example/literature", Page: p + 1, Position: i + 1,
				FetchedAt: time.Now().UTC().Format(time.RFC3339), RunID: "bench-run"}}
	}
	return out
}

// copySink writes as the alternative would: COPY into a temporary table,
// then INSERT … SELECT … ON CONFLICT, and the writer's count, in one
// transaction.
type copySink struct{ *pgSink }

func (c *copySink) Write(ctx context.Context, recs []record.Record) error {
	chunks, _, err := rowsJSON(recs, c.maxChunk)
	if err != nil {
		return err
	}
	var rows []row
	for _, c := range chunks {
		var part []row
		if err := json.Unmarshal(c, &part); err != nil {
			return err
		}
		rows = append(rows, part...)
	}
	var cols []string
	for _, col := range columns {
		switch col.name {
		case "search", "updated_at", "first_run", "first_seen":
		default:
			cols = append(cols, col.name)
		}
	}
	src := make([][]any, len(rows))
	for i, r := range rows {
		var pub, fetched any
		if r.Published != "" {
			pub, _ = time.Parse(time.DateOnly, r.Published)
		}
		if r.FetchedAt != "" {
			fetched, _ = time.Parse(time.RFC3339Nano, r.FetchedAt)
		}
		src[i] = []any{r.ID, nul(r.DOI), nul(r.DOIURL), nul(r.ArxivID), nul(r.URL), nul(r.Title), nul(r.TitleCN), r.Authors,
			nul(r.Abstract), nul(r.AbstractCN), pub, r.JournalID, nul(r.JournalName), nul(r.Volume), nul(r.Pages), r.ImpactFactor,
			int64(r.Zone), nul(r.Subject), nul(r.JCRQuartile), nul(r.JCRCategory), r.Citations, nul(r.OpenAccessPDF),
			nul(r.PublicationType), r.Warnings, r.SchemaVersion, nul(r.SourceURL), r.SourcePage, r.SourcePosition, nul(r.Run),
			fetched, string(r.Record)}
	}
	tx, err := c.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "CREATE TEMP TABLE IF NOT EXISTS stage ON COMMIT DELETE ROWS AS SELECT * FROM "+c.n.qTable+" WITH NO DATA"); err != nil {
		return err
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"stage"}, cols, pgx.CopyFromRows(src)); err != nil {
		return err
	}
	upsert := strings.Replace(c.insertSQL, "pg_catalog.jsonb_populate_recordset(NULL::"+c.n.qTable+", $1::jsonb)", "pg_temp.stage", 1)
	if _, err := tx.Exec(ctx, upsert); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, c.writerSQL, c.n.table, c.writer, "bench-run"); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func nul(s string) any {
	if s == "" {
		return nil
	}
	return s
}
