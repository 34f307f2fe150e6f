package engine

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/litcrawl/litcrawl/fetch"
	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/quality"
	"github.com/litcrawl/litcrawl/parser"
)

// Summary counts what a run did. It is safe for concurrent use while the
// run goes on; read it when the run has returned.
type Summary struct {
	Started time.Time

	// Pages by result; a page that failed more than once counts once in
	// Failed.
	Done, Skipped, Ended, Failed atomic.Int64
	PapersNew, PapersKnown       atomic.Int64
	// PapersUpdated counts known papers delivered again as their next
	// revision (the site changed them); PapersPoorer, known papers a page
	// showed changed but lacking what was delivered (not delivered: see
	// docs/revisions.md).
	PapersUpdated, PapersPoorer atomic.Int64
	// Held counts the records held back for a finding (quality.hold),
	// kept in the quarantine.
	Held atomic.Int64
	// Quarantined counts the records a sink refused for their content,
	// kept in the quarantine (sink.Quarantined).
	Quarantined atomic.Int64
	// Waits are the fetcher's long waits under way (crawler.Config.Waits),
	// for the progress display.
	Waits fetch.Waits

	// Busy time: while at least one page is in flight (a worker waiting
	// for jobs is idle, not busy), for rates that leave idle time out.
	busyMu    sync.Mutex
	inFlight  int
	busySince time.Time
	busy      time.Duration

	mu         sync.Mutex
	retries    map[string]int
	failures   []PageFailure
	failedAt   map[ledger.PageKey]int // index of each failed page in failures
	pageLog    *json.Encoder          // nil: page lines are not kept
	logErr     error
	quality    Quality
	journals   map[int64]*JournalCounts
	fetchHist  Histogram
	incomplete []IncompleteWalk
	walkNotes  []WalkNote
	notesLeft  int // walk notes past MaxWalkNotes
	audits     []AuditCoverage
}

// JournalCounts are one journal's share of a run.
type JournalCounts struct {
	PagesDone    int64 `json:"pages_done"`
	PagesFailed  int64 `json:"pages_failed"`
	PagesSkipped int64 `json:"pages_skipped"`
	PagesPastEnd int64 `json:"pages_past_end"`
	PapersNew    int64 `json:"papers_new"`
	PapersKnown  int64 `json:"papers_known"`
	// PapersUpdated are known papers delivered as a new revision.
	PapersUpdated int64 `json:"papers_updated,omitempty"`
	// Profile is what the journal's parsed papers held (the quality
	// gate learns the journal from it: quality.Learned).
	Profile *quality.Profile `json:"profile,omitempty"`
}

// IncompleteWalk is a nightly walk that stopped short of known papers
// (at nightly.max_pages, at a failed page, or when the run was stopped):
// the next nightly carries on past Page's papers; or an open-ended
// backfill that stopped at backfill.max_pages before the listing's end
// (Why WhyBackfillMaxPages).
type IncompleteWalk struct {
	Journal int64  `json:"journal"`
	Page    int    `json:"page"`          // the last page delivered
	Why     string `json:"why,omitempty"` // engine.WhyMaxPages, …
	// From is the page the next nightly carries on from (0: not said, a
	// run of an earlier version's).
	From int `json:"carry_on_from,omitempty"`
}

// WalkNote is something a nightly walk found and said: a paper delivered
// before met inside a gap, a jump that went too far, a search for the
// papers that prove a bound given up (engine.Walk), or a first crawl
// (Journal 0).
type WalkNote struct {
	Journal int64  `json:"journal,omitempty"`
	Text    string `json:"text"`
}

// MaxWalkNotes bounds the walk notes a run's summary keeps (the log has
// every one).
const MaxWalkNotes = 200

// AuditCoverage is where a journal's audit stood after a nightly: the
// pages it re-read that night (From to To; 0: none), where the next round
// goes on, and how old the least recently re-read page is.
type AuditCoverage struct {
	Journal int64 `json:"journal"`
	From    int   `json:"from,omitempty"`
	To      int   `json:"to,omitempty"`
	// Next is the page the next audit reads first; Pages the listing's
	// pages at the last round's end (0: no round complete yet).
	Next  int `json:"next"`
	Pages int `json:"pages,omitempty"`
	// Round is when the last complete round began (Unix seconds; 0: no
	// round complete yet, pages from Next on were never re-read); Since
	// when the current round began.
	Round int64 `json:"round,omitempty"`
	Since int64 `json:"since,omitempty"`
	// Wrapped: the audit reached the listing's end tonight.
	Wrapped bool `json:"wrapped,omitempty"`
}

// OldestDays is how many days ago, at now, the page re-read least
// recently was last re-read (ok false: some pages were never re-read).
func (a AuditCoverage) OldestDays(now time.Time) (days float64, ok bool) {
	if a.Round == 0 {
		return 0, false
	}
	return max(0, now.Sub(time.Unix(a.Round, 0)).Hours()/24), true
}

// AuditSummary is what the audits of a run's nightly walks cover, over
// its journals: how many pages they re-read, and how stale the listing's
// least recently re-read page is.
type AuditSummary struct {
	Journals int `json:"journals"`
	Pages    int `json:"pages"` // pages re-read by the run's audits
	// Round is the oldest start of a last complete round over the journals
	// that have one (Unix seconds): every page of theirs was re-read
	// since.
	Round int64 `json:"round,omitempty"`
	// Unaudited counts the journals whose audit has not been round their
	// listing yet (some pages never re-read); Worst is one of them (the
	// one with the most pages still to go), or the journal of Round.
	Unaudited int   `json:"unaudited,omitempty"`
	Worst     int64 `json:"worst,omitempty"`
	WorstNext int   `json:"worst_next,omitempty"` // the page Worst's audit reads next
	// Rows are up to MaxAuditRows journals, the most stale first.
	Rows []AuditCoverage `json:"rows,omitempty"`
}

// MaxAuditRows bounds the journals an AuditSummary lists.
const MaxAuditRows = 50

// Audit sums up the run's audits (nil: no nightly walk in the run).
func (s *Summary) Audit() *AuditSummary { return SumAudits(s.Audits()) }

// CoverageOf is a journal's audit coverage as its walk state stands.
func CoverageOf(journal int64, s ledger.WalkState) AuditCoverage {
	a := s.Audit
	return AuditCoverage{Journal: journal, Next: max(a.Next, 1), Pages: a.Pages, Round: a.Round, Since: a.Since}
}

// SumAudits sums up journals' audit coverage (nil: none).
func SumAudits(rows []AuditCoverage) *AuditSummary {
	rows = slices.Clone(rows)
	if len(rows) == 0 {
		return nil
	}
	a := &AuditSummary{Journals: len(rows)}
	for _, r := range rows {
		if r.From > 0 {
			a.Pages += r.To - r.From + 1
		}
	}
	// Most stale first: no round yet (the most pages to go first), then
	// the oldest round.
	slices.SortStableFunc(rows, func(x, y AuditCoverage) int {
		switch {
		case (x.Round == 0) != (y.Round == 0):
			if x.Round == 0 {
				return -1
			}
			return 1
		case x.Round == 0:
			return cmp.Compare(x.Next, y.Next)
		}
		return cmp.Compare(x.Round, y.Round)
	})
	for _, r := range rows {
		if r.Round == 0 {
			a.Unaudited++
		}
	}
	if w := rows[0]; w.Round == 0 {
		a.Worst, a.WorstNext = w.Journal, w.Next
	} else {
		a.Round, a.Worst, a.WorstNext = w.Round, w.Journal, w.Next
	}
	for _, r := range rows {
		if r.Round > 0 && (a.Round == 0 || r.Round < a.Round) {
			a.Round = r.Round
		}
	}
	a.Rows = rows[:min(len(rows), MaxAuditRows)]
	return a
}

// Text says what the audit covers, in a line, at now.
func (a AuditSummary) Text(now time.Time) string {
	read := fmt.Sprintf("%d pages re-read", a.Pages)
	if a.Pages == 1 {
		read = "1 page re-read"
	}
	switch {
	case a.Unaudited > 0 && a.Journals == 1:
		return fmt.Sprintf("%s; journal %d not yet audited whole: pages from %d on never re-read", read, a.Worst, a.WorstNext)
	case a.Unaudited > 0:
		return fmt.Sprintf("%s; %d of %d journals not yet audited whole (the most to go: journal %d, pages from %d on never re-read)", read, a.Unaudited, a.Journals, a.Worst, a.WorstNext)
	case a.Round > 0:
		return fmt.Sprintf("%s; every page of every journal re-read %s", read, Within(now.Sub(time.Unix(a.Round, 0))))
	}
	return read
}

// Within says that every page was re-read within d: "within 12d", or
// "within the last day".
func Within(d time.Duration) string {
	if d < 24*time.Hour {
		return "within the last day"
	}
	return "within " + Days(d)
}

// Days is a duration in whole days, as the audit's coverage is said
// ("<1d" under a day).
func Days(d time.Duration) string {
	if d < 24*time.Hour {
		return "<1d"
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// FetchSecondsBounds are the upper bounds, in seconds, of the buckets of
// the page fetch-time histogram (a last bucket holds the slower pages).
var FetchSecondsBounds = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Histogram counts values in buckets: Counts[i] holds the values at most
// LE[i] and above LE[i-1]; the last count, the values above every bound.
type Histogram struct {
	LE     []float64 `json:"le"`
	Counts []int64   `json:"counts"`
}

func (h *Histogram) observe(v float64) {
	if h.Counts == nil {
		h.LE = FetchSecondsBounds
		h.Counts = make([]int64, len(h.LE)+1)
	}
	i, _ := slices.BinarySearch(h.LE, v)
	h.Counts[i]++
}

// PageLine is one page's line in the run report.
type PageLine struct {
	Journal int64   `json:"journal"`
	Page    int     `json:"page"`
	Result  string  `json:"result"` // done, failed, skipped, past-end
	Tries   int     `json:"tries"`
	Seconds float64 `json:"seconds"`
	Records int     `json:"records"`
	Error   string  `json:"error,omitempty"`
}

// Quality counts what the parsed records hold, to catch layout drift
// (quality.Counts).
type Quality = quality.Counts

// LogPagesTo makes the summary write each finished page's PageLine to w
// as a line of JSON, in the order pages finish. The lines go out as pages
// finish and are not kept, so a run of any length holds no per-page memory.
// Call it before the run starts.
func (s *Summary) LogPagesTo(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pageLog = json.NewEncoder(w)
}

// PageLogErr is the first error writing the page log, if any.
func (s *Summary) PageLogErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logErr
}

// QualityCounts are the run's quality counts.
func (s *Summary) QualityCounts() Quality {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.quality
}

func (s *Summary) addPage(r PageLine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pageLog == nil || s.logErr != nil {
		return
	}
	s.logErr = s.pageLog.Encode(r)
}

func (s *Summary) addQuality(page *parser.Page, findings []parser.Finding) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quality.AddFound(page, findings)
	for _, r := range page.Records {
		j := page.JournalID
		if j == 0 && r.Journal != nil {
			j = r.Journal.ID
		}
		if j == 0 {
			continue
		}
		c := s.journal(j)
		if c.Profile == nil {
			c.Profile = &quality.Profile{}
		}
		c.Profile.Add(r)
	}
}

// Profiles are what each journal's parsed papers held so far.
func (s *Summary) Profiles() map[int64]quality.Profile {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int64]quality.Profile{}
	for j, c := range s.journals {
		if c.Profile != nil {
			p := *c.Profile
			p.Fields = maps.Clone(p.Fields)
			out[j] = p
		}
	}
	return out
}

// PageFailure is a page that failed permanently in this run.
type PageFailure struct {
	Journal int64  `json:"journal"`
	Page    int    `json:"page"`
	Error   string `json:"error"`
}

// NewSummary starts the count of a run now.
func NewSummary() *Summary { return &Summary{Started: time.Now(), retries: map[string]int{}} }

// PagesSeen is the pages finished in any way so far.
func (s *Summary) PagesSeen() int64 {
	return s.Done.Load() + s.Failed.Load() + s.Skipped.Load() + s.Ended.Load()
}

// RetriesTotal is the failed tries so far.
func (s *Summary) RetriesTotal() int {
	n := 0
	for _, v := range s.Retries() {
		n += v
	}
	return n
}

// journal is j's counts; call with s.mu held.
func (s *Summary) journal(j int64) *JournalCounts {
	if s.journals == nil {
		s.journals = map[int64]*JournalCounts{}
	}
	c := s.journals[j]
	if c == nil {
		c = &JournalCounts{}
		s.journals[j] = c
	}
	return c
}

func (s *Summary) addSkipped(j int64) {
	s.Skipped.Add(1)
	s.mu.Lock()
	s.journal(j).PagesSkipped++
	s.mu.Unlock()
}

func (s *Summary) addEnded(j int64) {
	s.Ended.Add(1)
	s.mu.Lock()
	s.journal(j).PagesPastEnd++
	s.mu.Unlock()
}

func (s *Summary) addDone(j int64, d Delivered) {
	fresh, known := d.Sent-d.Updated, d.Records-d.NewToLedger
	s.Done.Add(1)
	s.PapersNew.Add(int64(fresh))
	s.PapersKnown.Add(int64(known))
	s.PapersUpdated.Add(int64(d.Updated))
	s.PapersPoorer.Add(int64(d.Poorer))
	s.mu.Lock()
	c := s.journal(j)
	c.PagesDone++
	c.PapersNew += int64(fresh)
	c.PapersKnown += int64(known)
	c.PapersUpdated += int64(d.Updated)
	s.mu.Unlock()
}

// addFetchTime counts a fetched page's time (with its retries).
func (s *Summary) addFetchTime(seconds float64) {
	s.mu.Lock()
	s.fetchHist.observe(seconds)
	s.mu.Unlock()
}

func (s *Summary) addIncomplete(j int64, page int, why string, from ...int) {
	w := IncompleteWalk{Journal: j, Page: page, Why: why}
	if len(from) > 0 {
		w.From = from[0]
	}
	s.mu.Lock()
	s.incomplete = append(s.incomplete, w)
	s.mu.Unlock()
}

// Journals are the run's counts by journal.
func (s *Summary) Journals() map[int64]JournalCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int64]JournalCounts, len(s.journals))
	for j, c := range s.journals {
		cc := *c
		if c.Profile != nil {
			p := *c.Profile
			p.Fields = maps.Clone(p.Fields)
			cc.Profile = &p // (the run goes on counting into its own)
		}
		out[j] = cc
	}
	return out
}

// FetchSeconds is the histogram of the run's page fetch times (retries
// and their waits included), in seconds.
func (s *Summary) FetchSeconds() Histogram {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fetchHist.Counts == nil {
		return Histogram{LE: FetchSecondsBounds, Counts: make([]int64, len(FetchSecondsBounds)+1)}
	}
	return Histogram{LE: s.fetchHist.LE, Counts: slices.Clone(s.fetchHist.Counts)}
}

// addWalkNote keeps a walk's note (up to MaxWalkNotes).
func (s *Summary) addWalkNote(j int64, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.walkNotes) >= MaxWalkNotes {
		s.notesLeft++
		return
	}
	s.walkNotes = append(s.walkNotes, WalkNote{Journal: j, Text: text})
}

// WalkNotes are what the run's walks found and said, and how many more
// were left out.
func (s *Summary) WalkNotes() ([]WalkNote, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.walkNotes), s.notesLeft
}

// addAudit keeps a journal's audit coverage after its walk (the last one
// said, should a journal be walked twice).
func (s *Summary) addAudit(j int64, e WalkEnd) {
	a := e.State.Audit
	c := AuditCoverage{Journal: j, From: e.AuditFrom, To: e.AuditTo, Next: max(a.Next, 1), Pages: a.Pages, Round: a.Round, Since: a.Since, Wrapped: e.Wrapped}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.audits {
		if s.audits[i].Journal == j {
			s.audits[i] = c
			return
		}
	}
	s.audits = append(s.audits, c)
}

// Audits are the journals' audit coverage, by journal.
func (s *Summary) Audits() []AuditCoverage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.audits)
	slices.SortFunc(out, func(a, b AuditCoverage) int { return cmp.Compare(a.Journal, b.Journal) })
	return out
}

// IncompleteWalks are the walks that stopped short (IncompleteWalk).
func (s *Summary) IncompleteWalks() []IncompleteWalk {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.incomplete)
}

// addFailure counts a failed page once, however often it failed in the
// run (a worker may be handed the same page again): the failure keeps the
// last error.
func (s *Summary) addFailure(k ledger.PageKey, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.failedAt[k]; ok {
		s.failures[i].Error = err.Error()
		return
	}
	if s.failedAt == nil {
		s.failedAt = map[ledger.PageKey]int{}
	}
	s.failedAt[k] = len(s.failures)
	s.failures = append(s.failures, PageFailure{Journal: k.Journal, Page: k.Page, Error: err.Error()})
	s.Failed.Add(1)
	s.journal(k.Journal).PagesFailed++
}

// RetryLater takes a failed page back out of the run's failures: it is not
// given up but handed on, to be tried again later (a fleet's job, retried
// by whichever worker takes it next). It counts as a retry ("job").
func (s *Summary) RetryLater(k ledger.PageKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retries["job"]++
	i, ok := s.failedAt[k]
	if !ok {
		return
	}
	s.failures = slices.Delete(s.failures, i, i+1)
	delete(s.failedAt, k)
	for j := i; j < len(s.failures); j++ {
		s.failedAt[ledger.PageKey{Journal: s.failures[j].Journal, Page: s.failures[j].Page}] = j
	}
	s.Failed.Add(-1)
	s.journal(k.Journal).PagesFailed--
}

// countRetry counts a failed try by its cause.
func (s *Summary) countRetry(cause string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retries[cause]++
}

// CountQuarantined counts records a sink refused, kept in the quarantine.
func (s *Summary) CountQuarantined(n int) { s.Quarantined.Add(int64(n)) }

// CountSinkRetry counts a failed write (or opening) of a sink that is
// tried again, under the cause "sink".
func (s *Summary) CountSinkRetry() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retries["sink"]++
}

// Retries are the failed tries by cause.
func (s *Summary) Retries() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.retries))
	for k, v := range s.retries {
		out[k] = v
	}
	return out
}

// Failures are the pages that failed in this run.
func (s *Summary) Failures() []PageFailure {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]PageFailure(nil), s.failures...)
}

// String is the one-paragraph summary printed at the end of a run.
func (s *Summary) String() string {
	d := time.Since(s.Started)
	var rs []string
	for k, v := range s.Retries() {
		rs = append(rs, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(rs)
	retries := "none"
	if len(rs) > 0 {
		retries = strings.Join(rs, " ")
	}
	pps := float64(s.Done.Load()) / max(d.Seconds(), 1e-9)
	held := ""
	if n := s.Held.Load(); n > 0 {
		held = fmt.Sprintf(", %d held back", n)
	}
	return fmt.Sprintf("pages: %d ok, %d failed, %d skipped (done before), %d past the end; papers: %d new, %d updated, %d known%s; retries: %s; %v (%.1f pages/s)",
		s.Done.Load(), s.Failed.Load(), s.Skipped.Load(), s.Ended.Load(), s.PapersNew.Load(), s.PapersUpdated.Load(), s.PapersKnown.Load(),
		held, retries, d.Round(time.Millisecond), pps)
}

// pageBegins counts a page in flight; end (idempotent) ends it.
func (s *Summary) pageBegins() (end func()) {
	s.busyMu.Lock()
	if s.inFlight == 0 {
		s.busySince = time.Now()
	}
	s.inFlight++
	s.busyMu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.busyMu.Lock()
			defer s.busyMu.Unlock()
			if s.inFlight--; s.inFlight == 0 {
				s.busy += time.Since(s.busySince)
			}
		})
	}
}

// BusySeconds is the time at least one page was in flight: the run's
// length without its idle time (a fleet worker waiting for jobs).
func (s *Summary) BusySeconds() float64 {
	s.busyMu.Lock()
	defer s.busyMu.Unlock()
	b := s.busy
	if s.inFlight > 0 {
		b += time.Since(s.busySince)
	}
	return b.Seconds()
}
