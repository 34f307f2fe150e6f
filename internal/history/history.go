package history

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/exitcode"
	"github.com/litcrawl/litcrawl/internal/redact"
	"github.com/litcrawl/litcrawl/internal/state"
)

// History is the run history of a state directory, newest run first.
type History struct {
	Runs []RunView
	// HeldBy is the run that held the state when it was read (nil: none).
	// The history then comes from the snapshot that run wrote when it
	// started (state.SnapshotName): it ends with that run, under way.
	HeldBy *RunView
}

// RunView is one run as the history shows it: what was recorded when it
// started, and its summary when it ended. Runs recorded by older versions
// lack some of it; what they lack is zero (ExitCode nil).
type RunView struct {
	ID       string    `json:"id"`
	Kind     Kind      `json:"kind"`
	Status   string    `json:"status"` // finished, killed (no end recorded), running
	Journals []int64   `json:"journals"`
	Started  time.Time `json:"started"`
	// Finished is zero for a run killed before its end, or under way.
	Finished        time.Time `json:"finished,omitzero"`
	DurationSeconds float64   `json:"duration_seconds"`
	PID             int       `json:"pid,omitempty"`
	Host            string    `json:"host,omitempty"`
	ExitCode        *int      `json:"exit_code"`
	// Quality is the verdict on the parsed papers: ok, alarm, or none
	// (no page parsed, or no summary); QualityAlarm says which field.
	Quality      string `json:"quality"`
	QualityAlarm string `json:"quality_alarm,omitempty"`
	// Summary is the run's summary (nil: the run has none, it did not
	// end).
	Summary *RunSummary `json:"summary"`
	// Recovered says the run ended without its summary (killed) and
	// Summary holds only the counts it committed, read back from the
	// state: pages done and failed, papers new and known, by journal.
	Recovered bool `json:"recovered,omitempty"`
}

// Run statuses.
const (
	StatusFinished = "finished"
	StatusKilled   = "killed"
	StatusRunning  = "running"
)

// PagesDone and the other counts read the summary (0 without one).
func (v RunView) count(group, key string) int64 {
	if v.Summary == nil {
		return 0
	}
	switch group {
	case "pages":
		return v.Summary.Pages[key]
	case "papers":
		return v.Summary.Papers[key]
	}
	return 0
}

// Pages are the run's pages done, failed and past the end.
func (v RunView) Pages() (ok, failed, pastEnd int64) {
	return v.count("pages", "done"), v.count("pages", "failed"), v.count("pages", "past_end")
}

// Papers are the run's papers new and known.
func (v RunView) Papers() (fresh, known int64) {
	return v.count("papers", "new"), v.count("papers", "known")
}

// Revised are the run's papers delivered again as their next revision,
// and its records held back for a finding (quality.hold).
func (v RunView) Revised() (updated, held int64) {
	return v.count("papers", "updated"), v.count("papers", "held")
}

// PagesPerSecond is the run's pages done per second of work: per busy
// second (a page in flight) when the run recorded them, so that a fleet
// worker's idle time waiting for jobs does not count; else per second of
// its length. ok is false when it did no page or its length is unknown.
func (v RunView) PagesPerSecond() (rate float64, ok bool) {
	done, _, _ := v.Pages()
	secs := v.DurationSeconds
	if v.Summary != nil && v.Summary.BusySeconds > 0 {
		secs = v.Summary.BusySeconds
	}
	if done == 0 || secs <= 0 {
		return 0, false
	}
	return float64(done) / secs, true
}

// Outcome is how the run ended, in a word: its exit code, "killed",
// "running", or "" when it is not known (a run recorded before exit codes
// were).
func (v RunView) Outcome() string {
	switch {
	case v.ExitCode != nil:
		return strconv.Itoa(*v.ExitCode)
	case v.Status == StatusKilled, v.Status == StatusRunning:
		return v.Status
	}
	return ""
}

// Retries is the run's failed tries, all causes.
func (v RunView) Retries() int {
	n := 0
	if v.Summary != nil {
		for _, c := range v.Summary.Retries {
			n += c
		}
	}
	return n
}

// Read reads the run history of dir without getting in a crawl's
// way: it opens the state read-only; when a crawl holds it, it reads the
// snapshot that crawl wrote when it started, and says which crawl that
// is. thresholds judge the runs that did not record theirs.
func Read(dir string, thresholds config.Quality) (*History, error) {
	h := &History{}
	var runs []state.Run
	var tallies map[string]map[int64]state.Tally
	var sn0 state.Run // the run under way, when a crawl holds the state
	st, err := state.OpenReadOnly(dir)
	switch {
	case err == nil:
		runs, err = st.Runs()
		if err == nil {
			tallies, err = st.Tallies()
		}
		st.Close()
		if err != nil {
			return nil, err
		}
	case errors.Is(err, state.ErrLocked):
		sn, serr := state.ReadSnapshot(dir)
		if serr != nil {
			if errors.Is(serr, fs.ErrNotExist) {
				return nil, fmt.Errorf("%w; it was written by a version that leaves no history snapshot: try again when that crawl has ended", err)
			}
			return nil, fmt.Errorf("%w, and its history snapshot cannot be read: %v", err, serr)
		}
		if host, _ := os.Hostname(); sn.Current.Host == host && !state.Alive(sn.Current.PID) {
			return nil, fmt.Errorf("%w (not by the crawl that wrote %s: process %d has ended); try again when it is free", err, state.SnapshotName, sn.Current.PID)
		}
		runs, tallies, sn0 = sn.Runs, sn.Tallies, sn.Current
		cur := view(sn.Current, thresholds)
		cur.Status = StatusRunning
		h.HeldBy = &cur
	default:
		return nil, err
	}
	if h.HeldBy != nil && !slices.ContainsFunc(runs, func(r state.Run) bool { return r.ID == h.HeldBy.ID }) {
		runs = append(runs, sn0) // a snapshot of an older version lacks the run under way
	}
	// Newest first: by start time (ids sort by the second a run started,
	// then at random), then by id.
	slices.SortStableFunc(runs, func(a, b state.Run) int {
		if c := b.Started.Compare(a.Started); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	for i := range runs {
		v := view(runs[i], thresholds)
		if h.HeldBy != nil && v.ID == h.HeldBy.ID {
			v = *h.HeldBy
		} else if v.Status == StatusKilled && v.Summary == nil {
			recoverCounts(&v, tallies[v.ID])
		}
		h.Runs = append(h.Runs, v)
	}
	return h, nil
}

// recoverCounts gives a run killed before its end the counts it
// committed (the state's tally), marked as recovered: what it delivered
// is in the sinks, and totals over the history must count it.
func recoverCounts(v *RunView, t map[int64]state.Tally) {
	if len(t) == 0 {
		return
	}
	rep := RunSummary{RunID: v.ID, Kind: v.Kind, Started: v.Started.UTC().Format(time.RFC3339),
		Pages: map[string]int64{}, Papers: map[string]int64{}, Failures: []engine.PageFailure{},
		PerJournal: map[string]engine.JournalCounts{}}
	clamp := func(n int64) int64 { return min(max(n, 0), maxCount) }
	for j, c := range t {
		if j <= 0 {
			continue // no journal's
		}
		c = state.Tally{PagesDone: clamp(c.PagesDone), PagesFailed: clamp(c.PagesFailed), PapersNew: clamp(c.PapersNew), PapersKnown: clamp(c.PapersKnown),
			PapersUpdated: clamp(c.PapersUpdated)}
		rep.Pages["done"] += c.PagesDone
		rep.Pages["failed"] += c.PagesFailed
		rep.Papers["new"] += c.PapersNew
		rep.Papers["known"] += c.PapersKnown
		rep.Papers["updated"] += c.PapersUpdated
		rep.PerJournal[strconv.FormatInt(j, 10)] = engine.JournalCounts{PagesDone: c.PagesDone, PagesFailed: c.PagesFailed,
			PapersNew: c.PapersNew, PapersKnown: c.PapersKnown, PapersUpdated: c.PapersUpdated}
	}
	sanitize(&rep)
	v.Summary, v.Recovered = &rep, true
	if len(v.Journals) == 0 {
		v.Journals = journalsOf(rep)
	}
}

// view makes a run's view from its history entry.
func view(r state.Run, thresholds config.Quality) RunView {
	v := RunView{ID: r.ID, Kind: Kind(r.Kind), Journals: r.Journals, Started: r.Started, Finished: r.Finished,
		PID: r.PID, Host: r.Host, Status: StatusFinished, Quality: "none"}
	if v.Journals == nil {
		v.Journals = []int64{}
	}
	if r.Finished.IsZero() {
		v.Status = StatusKilled
	} else if d := r.Finished.Sub(r.Started).Seconds(); d >= minRunSeconds && d <= maxRunSeconds {
		v.DurationSeconds = d
	}
	if len(r.Summary) > 0 {
		var rep RunSummary
		if json.Unmarshal(r.Summary, &rep) == nil {
			sanitize(&rep)
			v.Summary = &rep
			v.ExitCode = rep.ExitCode
			if len(v.Journals) == 0 {
				v.Journals = journalsOf(rep)
			}
			if rep.DurationSeconds > 0 {
				v.DurationSeconds = rep.DurationSeconds
			}
			t := thresholds
			if rep.QualityThresholds != nil {
				t = *rep.QualityThresholds
			}
			if rep.Quality.Pages > 0 {
				v.Quality = "ok"
				if err := QualityAlarm(t, rep.Quality); err != nil {
					v.Quality, v.QualityAlarm = "alarm", strings.TrimPrefix(err.Error(), "quality alarm: ")
				} else if rep.QualityLearned != "" {
					v.Quality, v.QualityAlarm = "alarm", rep.QualityLearned // a journal unlike its recent runs
				}
			}
		}
	}
	return v
}

// sanitize drops or clamps what a summary cannot mean (a file edited by
// hand, a --report file from elsewhere), so that one odd run cannot stop
// a listing or a report: a histogram whose buckets are not the crawl's, a
// threshold that is no share, a duration beyond any run, counts below 0.
func sanitize(rep *RunSummary) {
	rep.Error = redact.Text(rep.Error) // a file from elsewhere may quote a URL with its password
	if len(rep.QualityLearned) > 4096 {
		rep.QualityLearned = rep.QualityLearned[:4096]
	}
	rep.QualityLearned = redact.Text(rep.QualityLearned)
	if h := rep.FetchSeconds; h != nil {
		if !slices.Equal(h.LE, engine.FetchSecondsBounds) || len(h.Counts) != len(h.LE)+1 {
			rep.FetchSeconds = nil
		} else {
			for i, c := range h.Counts {
				h.Counts[i] = max(c, 0)
			}
		}
	}
	if t := rep.QualityThresholds; t != nil && t.Validate() != nil {
		rep.QualityThresholds = nil
	}
	// Under a millisecond (a denormal such as 5e-324 in a tampered
	// summary) a duration makes every rate infinite: it reads as unknown.
	if !(rep.DurationSeconds >= minRunSeconds && rep.DurationSeconds <= maxRunSeconds) {
		rep.DurationSeconds = 0
	}
	if !(rep.BusySeconds >= minRunSeconds && rep.BusySeconds <= rep.DurationSeconds) {
		rep.BusySeconds = 0
	}
	for _, m := range []map[string]int64{rep.Pages, rep.Papers} {
		for k, n := range m {
			m[k] = min(max(n, 0), maxCount)
		}
	}
	for k, n := range rep.Retries {
		rep.Retries[k] = min(max(n, 0), maxCount)
	}
	// More causes than a crawl has are merged: a chart keeps its legend.
	if len(rep.Retries) > maxCauses {
		keys := slices.SortedFunc(maps.Keys(rep.Retries), func(a, b string) int {
			return cmp.Or(cmp.Compare(rep.Retries[b], rep.Retries[a]), cmp.Compare(a, b))
		})
		other := 0
		for _, k := range keys[maxCauses-1:] {
			other = min(other+rep.Retries[k], maxCount)
			delete(rep.Retries, k)
		}
		rep.Retries["other causes"] = other
	}
	if len(rep.PerJournal) > maxJournalsKept {
		rep.PerJournal = nil
	}
	for k, c := range rep.PerJournal {
		for _, n := range []*int64{&c.PagesDone, &c.PagesFailed, &c.PagesSkipped, &c.PagesPastEnd, &c.PapersNew, &c.PapersKnown} {
			*n = min(max(*n, 0), maxCount)
		}
		if c.Profile != nil && !c.Profile.Valid() {
			c.Profile = nil // a profile no run wrote: not learned from
		}
		rep.PerJournal[k] = c
	}
	for i := range rep.Failures {
		rep.Failures[i].Error = redact.Text(rep.Failures[i].Error)
	}
	rep.Quarantined = min(max(rep.Quarantined, 0), maxCount)
	q := &rep.Quality
	for _, n := range []*int{&q.Pages, &q.Records, &q.WithTitle, &q.WithDOI, &q.WithAuthor, &q.WithDate} {
		*n = max(*n, 0)
	}
	for _, n := range []*int{&q.WithTitle, &q.WithDOI, &q.WithAuthor, &q.WithDate} {
		*n = min(*n, q.Records)
	}
}

// maxCauses bounds the retry causes a summary keeps (a crawl has about
// ten), maxJournalsKept its per-journal counts.
const (
	maxCauses       = 16
	maxJournalsKept = 100000
)

// maxCount is more than any run counts (a trillion): a larger count is
// clamped, so that totals cannot overflow.
const maxCount = 1 << 40

// maxRunSeconds is longer than any run (a year), minRunSeconds shorter
// than any (a millisecond): a duration outside them is taken as unknown.
const (
	maxRunSeconds = 366 * 24 * 3600
	minRunSeconds = 1e-3
)

// journalsOf are the journals a summary names (by its per-journal counts
// and failures), for runs that did not record theirs.
func journalsOf(rep RunSummary) []int64 {
	var js []int64
	for k := range rep.PerJournal {
		var j int64
		if _, err := fmt.Sscan(k, &j); err == nil {
			js = append(js, j)
		}
	}
	for _, f := range rep.Failures {
		js = append(js, f.Journal)
	}
	slices.Sort(js)
	return slices.Compact(js)
}

// Find is the run whose id is id, or starts with it (a unique prefix);
// "latest" is the newest run; a number, the run of that number in the #
// column crawl runs and the report print (1 the oldest): "#3" and "3"
// (up to three digits) always, a longer number when the history holds
// that many runs (else, and from eight digits, it is an id's prefix:
// "2026", "20261206").
func (h *History) Find(id string) (RunView, error) {
	if id == "latest" && len(h.Runs) > 0 {
		return h.Runs[0], nil
	}
	if strings.TrimSpace(id) == "" {
		return RunView{}, exitcode.Usagef("run id: empty (give an id, a prefix of one, a # number, or latest)")
	}
	digits, hash := strings.CutPrefix(id, "#")
	// (a run id begins with its day's eight digits: eight or more are
	// its prefix)
	number := digits != "" && (hash || len(digits) < 8) && len(digits) <= 9 && strings.Trim(digits, "0123456789") == ""
	if number {
		if n, _ := strconv.Atoi(digits); n >= 1 && n <= len(h.Runs) {
			return h.Runs[len(h.Runs)-n], nil
		} else if hash || len(digits) < 4 {
			// (fewer than four digits are no useful prefix of an id,
			// which begins with its year: a number past the history)
			return RunView{}, exitcode.Usagef("run #%d: the history numbers its runs #1 to #%d (crawl runs lists them)", n, len(h.Runs))
		}
	}
	var found []RunView
	for _, v := range h.Runs {
		if v.ID == id {
			return v, nil
		}
		if strings.HasPrefix(v.ID, id) {
			found = append(found, v)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		if number {
			return RunView{}, exitcode.Usagef("run %q: no run has this number (the history numbers its runs #1 to #%d) and no run id starts with it (crawl runs lists them)", id, len(h.Runs))
		}
		return RunView{}, exitcode.Usagef("run %q: no such run in the history (crawl runs lists them)", id)
	}
	return RunView{}, exitcode.Usagef("run %q: %d runs start with it (%s, …): give more of the id", id, len(found), found[0].ID)
}

// FromReport is the view of a run known only from its --report file.
func FromReport(rep RunSummary, thresholds config.Quality) RunView {
	started, _ := time.Parse(time.RFC3339, rep.Started)
	data, _ := json.Marshal(rep)
	r := state.Run{ID: rep.RunID, Kind: string(rep.Kind), Started: started, Journals: rep.Journals, Summary: data, Host: rep.Host, PID: rep.PID, Finished: started}
	if d := rep.DurationSeconds; d >= minRunSeconds && d <= maxRunSeconds {
		r.Finished = started.Add(time.Duration(d * float64(time.Second)))
	}
	return view(r, thresholds)
}
