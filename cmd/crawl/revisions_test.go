package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/feedtest"
	"github.com/litcrawl/litcrawl/internal/natstest"
	"github.com/litcrawl/litcrawl/internal/pgtest"
	"github.com/litcrawl/litcrawl/internal/testsite"
	"github.com/litcrawl/litcrawl/record"
)

// content is a record as the site shows the paper: without what says
// where and when it was read, which revision it is, and its citation
// count (not a change of its own: updates.citations is off).
func content(t *testing.T, r record.Record) string {
	t.Helper()
	r.Source, r.Revision, r.Changed, r.Replaces, r.Citations = record.Source{}, 0, nil, "", nil
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// latest is a stream of revisions read as the docs say: the last revision
// of each id wins, and an id a later record replaces is gone.
func latest(recs []record.Record) map[string]record.Record {
	out := map[string]record.Record{}
	for _, r := range recs {
		if o, ok := out[r.ID]; !ok || r.Revision >= o.Revision {
			out[r.ID] = r
		}
	}
	for _, r := range recs {
		if r.Replaces != "" {
			delete(out, r.Replaces)
		}
	}
	return out
}

// sameContent fails unless got holds, by id, what want holds.
func sameContent(t *testing.T, where string, got, want map[string]record.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d papers, the site %d", where, len(got), len(want))
	}
	for _, id := range slices.Sorted(maps.Keys(want)) {
		if g, w := content(t, got[id]), content(t, want[id]); g != w {
			t.Fatalf("%s: paper %s is not as the site shows it:\n got %s\nwant %s", where, id, g, w)
		}
	}
}

// The site improves papers after they were delivered: a crawl of 200
// papers, then the JSON of 20 appears (their id becomes the site's), 20
// titles are fixed, 20 DOIs appear and 20 citation counts grow. Re-read,
// killed with -9 while it delivers the revisions and run again, the
// pages deliver exactly the 60 changed papers as their revision 2, each
// once, into a JSONL file, a PostgreSQL table, a NATS stream and an Atom
// feed; a third read delivers nothing; and every sink then holds each
// paper as a clean crawl of the site now reads it.
func TestRevisionsConvergeAcrossKill9(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	const j = 9301
	site := testsite.New()
	site.SynthJournal(j, 10, 20)
	hs := httptest.NewServer(site)
	defer hs.Close()
	var ids []string
	for p := 1; p <= 10; p++ {
		for i := range 20 {
			ids = append(ids, testsite.SynthID(j, p, i))
		}
	}
	kind := func(n int) int { return n % 10 } // 0: JSON later, 1: title fixed, 2: DOI later, 3: citations grow
	for n, id := range ids {
		switch kind(n) {
		case 0:
			site.SetVariant(id, testsite.Variant{NoJSON: true})
		case 1:
			site.SetVariant(id, testsite.Variant{Title: "Synthetic Paper " + id + " on Scalable Crawlnig"})
		case 2:
			site.SetVariant(id, testsite.Variant{NoDOI: true})
		}
	}
	pg := pgtest.Shared(t)
	db := pg.NewDB(t)
	nc := natstest.Start(t)
	dir := t.TempDir()
	jsonl, feeds := filepath.Join(dir, "papers.jsonl"), filepath.Join(dir, "feeds")
	sinks := []string{"--sink", "jsonl:" + jsonl, "--sink", pg.URL(db, "table=papers"),
		"--sink", nc.URL() + "/papers.rev?stream=PAPERSREV", "--sink", "atom:" + feeds + "?keep=1000"}
	// run runs a backfill of every page; with gate > 0 it is killed with
	// -9 while page gate is held at the site and after minCommits pages
	// were committed. It returns the run's standard error.
	hold := make(chan struct{})
	run := func(stateDir string, out []string, gate, minCommits int, extra ...string) string {
		t.Helper()
		arrived := make(chan struct{})
		if gate > 0 {
			site.Inject(testsite.PagePath(j, gate), testsite.Fault{Kind: testsite.Gate, Arrived: arrived, Open: hold})
		}
		args := append([]string{"backfill", "--journal", fmt.Sprint(j), "--pages", "1-", "--base-url", hs.URL, "--delay", "0",
			"--concurrency", "1", "--config", filepath.Join(repoRoot, "config.yaml"), "--state-dir", stateDir}, out...)
		cmd := exec.Command(bin, append(args, extra...)...)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var log strings.Builder
		commits, eof := make(chan struct{}, 64), make(chan struct{})
		go func() {
			defer close(eof)
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				log.WriteString(sc.Text() + "\n")
				if strings.Contains(sc.Text(), "page committed") && strings.Contains(sc.Text(), "delivered=") {
					select {
					case commits <- struct{}{}:
					default:
					}
				}
			}
		}()
		if gate > 0 {
			n := 0
			for waiting := arrived; waiting != nil || n < minCommits; {
				select {
				case <-waiting:
					waiting = nil
				case <-commits:
					n++
				case <-eof:
					cmd.Wait()
					t.Fatalf("the run ended before it was killed:\n%s", log.String())
				}
			}
			cmd.Process.Kill() // SIGKILL
		}
		<-eof
		err = cmd.Wait()
		if gate == 0 && err != nil {
			t.Fatalf("backfill: %v\n%s", err, log.String())
		}
		return log.String()
	}
	state := filepath.Join(dir, "state")
	if out := run(state, sinks, 0, 0); !strings.Contains(out, "papers: 200 new, 0 updated") {
		t.Fatalf("first crawl:\n%s", out)
	}
	// The site improves 60 papers and 20 citation counts.
	grown := 100
	for n, id := range ids {
		switch kind(n) {
		case 0, 1, 2:
			site.SetVariant(id, testsite.Variant{})
		case 3:
			site.SetVariant(id, testsite.Variant{Citations: &grown})
		}
	}
	run(state, sinks, 6, 3, "--no-resume") // killed with page 6 in flight
	close(hold)
	second := run(state, sinks, 0, 0, "--no-resume")
	third := run(state, sinks, 0, 0, "--no-resume")
	if !strings.Contains(third, "papers: 0 new, 0 updated, 200 known") {
		t.Errorf("a third read delivered something:\n%s", third)
	}

	// The site as a clean crawl reads it now.
	cleanDir := t.TempDir()
	run(filepath.Join(cleanDir, "state"), []string{"--sink", "jsonl:" + filepath.Join(cleanDir, "papers.jsonl")}, 0, 0)
	want := latest(readJSONL(t, filepath.Join(cleanDir, "papers.jsonl")))

	// JSONL: every revision once; 60 revisions 2, of the papers changed.
	recs := readJSONL(t, jsonl)
	type key struct {
		id  string
		rev int
	}
	seen := map[key]bool{}
	revised := map[string][]string{}
	for _, r := range recs {
		k := key{r.ID, r.Revision}
		if seen[k] {
			t.Fatalf("paper %s revision %d is in the file twice", r.ID, r.Revision)
		}
		seen[k] = true
		if r.Revision > 1 {
			revised[r.ID] = r.Changed
		}
	}
	if len(recs) != 260 || len(revised) != 60 {
		t.Errorf("the file holds %d records, %d of them revisions (want 260 and 60); the second read said:\n%s", len(recs), len(revised), second)
	}
	unnamed := 0
	for n, id := range ids {
		ch, ok := revised[id]
		switch kind(n) {
		case 0:
			ok = ok && slices.Contains(ch, "id") && slices.Contains(ch, "abstract")
		case 1:
			// A title changed in place is named by a 4-bit hash of it:
			// one change in 15 is named "content" (docs/revisions.md).
			ok = ok && (slices.Equal(ch, []string{"title"}) || slices.Equal(ch, []string{"content"}))
			if slices.Equal(ch, []string{"content"}) {
				unnamed++
			}
		case 2:
			ok = ok && slices.Equal(ch, []string{"doi"})
		default:
			ok = !ok
		}
		if !ok {
			t.Errorf("paper %s (kind %d): changed %v", id, kind(n), ch)
		}
	}
	if unnamed > 4 {
		t.Errorf("%d of 20 title fixes named \"content\", not \"title\"", unnamed)
	}
	sameContent(t, "JSONL", latest(recs), want)

	// PostgreSQL: one row a paper, the latest revision.
	rows := pgRecords(t, pg, db)
	sameContent(t, "PostgreSQL", rows, want)

	// NATS: every revision once (a message id per revision).
	var msgs []record.Record
	for _, m := range natstest.Messages(t, nc.URL(), "PAPERSREV") {
		var r record.Record
		if err := json.Unmarshal(m.Data, &r); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, r)
	}
	if len(msgs) != 260 {
		t.Errorf("the stream holds %d messages, want 260", len(msgs))
	}
	sameContent(t, "NATS", latest(msgs), want)

	// Atom: one entry a paper, with the site's title, its <updated> moved
	// on where it was revised.
	f := feedtest.Read(t, filepath.Join(feeds, fmt.Sprintf("%d.atom", j)))
	var titles, wantTitles []string
	for _, e := range f.Entries {
		titles = append(titles, e.Title.Body)
	}
	for _, r := range want {
		wantTitles = append(wantTitles, r.Title)
	}
	slices.Sort(titles)
	slices.Sort(wantTitles)
	if !slices.Equal(titles, wantTitles) {
		t.Errorf("the feed's %d titles are not the site's %d", len(titles), len(wantTitles))
	}
	feedtest.Feedparser(t, filepath.Join(feeds, fmt.Sprintf("%d.atom", j)))
}

// readJSONL reads every record of a JSONL file.
func readJSONL(t *testing.T, path string) []record.Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []record.Record
	for i, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var r record.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%s line %d: %v", path, i+1, err)
		}
		out = append(out, r)
	}
	return out
}

// pgRecords reads a papers table's records: id → the record column.
func pgRecords(t *testing.T, srv *pgtest.Server, db string) map[string]record.Record {
	t.Helper()
	conn, err := srv.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	rows, err := conn.Query(t.Context(), "SELECT id, record FROM papers")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]record.Record{}
	for rows.Next() {
		var id string
		var r record.Record
		if err := rows.Scan(&id, &r); err != nil {
			t.Fatal(err)
		}
		if r.ID != id {
			t.Fatalf("row %s holds record %s", id, r.ID)
		}
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// crawl replay --updates delivers, against a crawl state, what an archive
// shows changed since the state's runs delivered: the next revision of
// each changed paper, each once (a second replay delivers nothing), into
// the state's sinks.
func TestReplayUpdatesDeliversRevisions(t *testing.T) {
	t.Parallel()
	const j = 9302
	site := testsite.New()
	site.SynthJournal(j, 2, 10)
	for i := range 4 {
		id := testsite.SynthID(j, 1, i)
		site.SetVariant(id, testsite.Variant{Title: "Synthetic Paper " + id + " on Scalable Crawlnig"})
	}
	hs := httptest.NewServer(site)
	defer hs.Close()
	dir := t.TempDir()
	out, state := filepath.Join(dir, "papers.jsonl"), filepath.Join(dir, "state")
	common := []string{"--journal", fmt.Sprint(j), "--pages", "1-", "--base-url", hs.URL, "--delay", "0"}
	if code, _, errs := crawl(t, append([]string{"backfill", "--state-dir", state, "--sink", "jsonl:" + out}, common...)...); code != 0 {
		t.Fatalf("first crawl: exit %d: %s", code, errs)
	}
	// The site fixes the titles, and shows a date 70 years ahead for a
	// paper of page 2; another crawl, elsewhere, archives it.
	for i := range 4 {
		site.SetVariant(testsite.SynthID(j, 1, i), testsite.Variant{})
	}
	odd := testsite.SynthID(j, 2, 5)
	site.SetVariant(odd, testsite.Variant{Published: "2099-01-02"})
	warc := filepath.Join(dir, "warc")
	if code, _, errs := crawl(t, append([]string{"backfill", "--state-dir", filepath.Join(dir, "other"), "--sink", "jsonl:" + filepath.Join(dir, "other.jsonl"), "--archive", warc}, common...)...); code != exitcode.Quality {
		t.Fatalf("archiving crawl (holds the paper read wrong: exit 4): exit %d: %s", code, errs)
	}
	hs.Close()
	replay := []string{"replay", "--archive", warc, "--updates", "--state-dir", state, "--sink", "jsonl:" + out}
	// The paper read wrong is held back, as a crawl holds it: exit 4.
	code, _, errs := crawl(t, replay...)
	if code != exitcode.Quality || !strings.Contains(errs, "papers: 0 new, 4 updated, 1 held back") || !strings.Contains(errs, "quality.hold") {
		t.Fatalf("replay --updates: exit %d: %s", code, errs)
	}
	recs := readJSONL(t, out)
	if len(recs) != 24 {
		t.Fatalf("%d records after the replay, want 20 and 4 revisions", len(recs))
	}
	for _, r := range recs[20:] {
		if r.Revision != 2 || !slices.Equal(r.Changed, []string{"title"}) && !slices.Equal(r.Changed, []string{"content"}) || strings.Contains(r.Title, "Crawlnig") {
			t.Errorf("revision %d of %s: changed %v, title %q", r.Revision, r.ID, r.Changed, r.Title)
		}
	}
	if code, _, errs := crawl(t, replay...); code != exitcode.Quality || !strings.Contains(errs, "papers: 0 new, 0 updated, 1 held back") || len(readJSONL(t, out)) != 24 {
		t.Fatalf("a second replay: exit %d: %s", code, errs)
	}
	for _, r := range readJSONL(t, out) {
		if r.ID == odd && r.Revision > 1 {
			t.Errorf("the paper read wrong was delivered as revision %d", r.Revision)
		}
	}
	// The replays are in the history, with what they did.
	if code, out, _ := crawl(t, "runs", "--state-dir", state); code != exitcode.OK || strings.Count(out, " replay ") != 2 || !strings.Contains(out, "0/4/") {
		t.Errorf("crawl runs after two replays: exit %d:\n%s", code, out)
	}
	// No sink given and none configured: refused (standard output would
	// take the records, and the state count them delivered).
	if code, _, errs := crawl(t, "replay", "--archive", warc, "--updates", "--state-dir", state); code != exitcode.Fatal || !strings.Contains(errs, "standard output") {
		t.Errorf("replay --updates without a sink: exit %d: %s", code, errs)
	}
	// A state that is not there is a mistyped path, not a first delivery.
	if code, _, errs := crawl(t, "replay", "--archive", warc, "--updates", "--state-dir", filepath.Join(dir, "no-such-state"), "--sink", "jsonl:"+filepath.Join(dir, "x.jsonl")); code != exitcode.Fatal || !strings.Contains(errs, "no-such-state") {
		t.Errorf("replay --updates of a state that is not there: exit %d: %s", code, errs)
	}
	if code, _, errs := crawl(t, "replay", "--archive", warc, "--state-dir", state); code != 2 || !strings.Contains(errs, "--updates") {
		t.Errorf("--state-dir without --updates: exit %d: %s", code, errs)
	}
}

// A fleet worker holds back what a local run holds back: the record read
// wrong goes to the worker's quarantine (beside its state_dir) with its
// page, the others to the sink, and the worker exits 4 saying so.
func TestWorkerHoldsBackARecordReadWrong(t *testing.T) {
	t.Parallel()
	const j = 9303
	site := testsite.New()
	site.SynthJournal(j, 1, 5)
	odd := testsite.SynthID(j, 1, 3)
	site.SetVariant(odd, testsite.Variant{Published: "2099-01-02"})
	srv := httptest.NewServer(site)
	defer srv.Close()
	n := natstest.Start(t)
	if code, _, errs := crawl(t, "enqueue", "--frontier", n.URL(), "--journal", fmt.Sprint(j), "--pages", "1"); code != exitcode.OK {
		t.Fatalf("enqueue: exit %d: %s", code, errs)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("state_dir: "+filepath.Join(dir, "state")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := crawl(t, "worker", "--config", cfg, "--frontier", n.URL(), "--base-url", srv.URL, "--delay", "0", "--exit-when-idle", "1s",
		"--sink", n.URL()+"/papers.h?stream=H")
	if code != exitcode.Quality || !strings.Contains(errs, "1 record held back") {
		t.Fatalf("worker: exit %d, want %d: %s", code, exitcode.Quality, errs)
	}
	got := natstest.RecordIDs(t, n.URL(), "H")
	if len(got) != 4 || got[odd] != 0 {
		t.Errorf("the stream holds %v; want the 4 others", got)
	}
	code, out, _ := crawl(t, "quarantine", "list", "--state-dir", filepath.Join(dir, "state"))
	if code != exitcode.OK || !strings.Contains(out, odd) || !strings.Contains(out, "held back") {
		t.Errorf("quarantine list: exit %d: %s", code, out)
	}
}
