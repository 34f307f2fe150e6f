package quality

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/litcrawl/litcrawl/record"
)

// Alarms that learn the journal. The fixed thresholds (Check) hold every
// journal to one floor; a journal's own papers say more: a journal whose
// papers have always shown their zone, their Chinese abstract or their
// citation count, and whose papers of this run suddenly have none, was
// read wrong (its layout changed), though every field left looks right.
// Each run keeps a Profile of each journal's papers in its summary (the
// run history); Learned compares this run's with the journal's recent
// runs.

// Profile is what one journal's papers of one run hold: how many
// records, how many have each learned field, and the shape of two fields
// (names a paper, abstract length).
type Profile struct {
	Records int            `json:"records"`
	Fields  map[string]int `json:"fields,omitempty"`
	// Names are the authors' names of all records; AbstractBytes the
	// bytes of all their abstracts.
	Names         int `json:"names,omitempty"`
	AbstractBytes int `json:"abstract_bytes,omitempty"`
	// Relearn: this run starts the journal's profile anew (--relearn):
	// the runs before it are not learned from.
	Relearn bool `json:"relearn,omitempty"`
	// Alarmed: the learned gate alarmed on this journal in this run: its
	// papers are not learned from (the alarm holds, run after run, until
	// the layout is back or a run relearns).
	Alarmed bool `json:"alarmed,omitempty"`
}

// LearnedFields are the fields whose presence is learned, by their JSON
// names ("jcr" for the JCR quartile and category).
var LearnedFields = []string{"title_cn", "authors", "abstract", "abstract_cn", "zone", "subject", "jcr", "citations"}

// What learning takes.
const (
	// LearnRuns is how many of a journal's recent runs are learned from
	// (the newest, with at least MinRecords of its papers each).
	LearnRuns = 5
	// MinLearnedRuns is how many such runs a journal needs before its own
	// runs are compared; before, the fixed thresholds alone hold it.
	MinLearnedRuns = 3
	// MinRecords is how many of a journal's papers a run must have read
	// to learn from it, or to be compared.
	MinRecords = 5
	// UsualShare: a field is usual for a journal when at least this share
	// of its papers had it in every learned run.
	UsualShare = 0.8
	// DropFactor: a usual field alarms when this run's share falls below
	// this factor of its lowest learned share; the names a paper and the
	// abstract length, likewise of their lowest learned mean.
	DropFactor = 0.5
)

// Add counts one record.
func (p *Profile) Add(r record.Record) {
	p.Records++
	if p.Fields == nil {
		p.Fields = map[string]int{}
	}
	for _, f := range LearnedFields {
		if has(r, f) {
			p.Fields[f]++
		}
	}
	p.Names += len(r.Authors)
	p.AbstractBytes += len(r.Abstract)
}

// Valid: the counts are ones a run writes (a profile read back from a
// run's summary is held to it): no count below 0 or above its records,
// only learned fields.
func (p Profile) Valid() bool {
	if p.Records < 0 || p.Names < 0 || p.AbstractBytes < 0 || len(p.Fields) > len(LearnedFields) ||
		p.Names > 10_000*max(p.Records, 1) || p.AbstractBytes > 1<<20*max(p.Records, 1) {
		return false
	}
	for f, n := range p.Fields {
		if n < 0 || n > p.Records || !slices.Contains(LearnedFields, f) {
			return false
		}
	}
	return true
}

// has says whether r has field f.
func has(r record.Record, f string) bool {
	switch f {
	case "title_cn":
		return r.TitleCN != ""
	case "authors":
		return len(r.Authors) > 0
	case "abstract":
		return r.Abstract != ""
	case "abstract_cn":
		return r.AbstractCN != ""
	case "zone":
		return r.Zone > 0
	case "subject":
		return r.Subject != ""
	case "jcr":
		return r.JCRQuartile != ""
	case "citations":
		return r.Citations != nil
	}
	return false
}

func (p Profile) share(f string) float64 { return float64(p.Fields[f]) / float64(max(p.Records, 1)) }

// Learnable returns the runs a journal's profile is learned from: of
// recent (newest first), the first LearnRuns with MinRecords records that
// did not alarm on it, stopping after a run that relearned.
func Learnable(recent []Profile) []Profile {
	var out []Profile
	for _, p := range recent {
		if len(out) == LearnRuns {
			break
		}
		if p.Records >= MinRecords && !p.Alarmed {
			out = append(out, p)
		}
		if p.Relearn {
			break
		}
	}
	return out
}

// Learned compares journal j's papers of this run (now) with its recent
// runs' (newest first): it names each usual field that went missing, and
// each field whose shape changed; nothing when the journal has too few
// runs to learn from, or this run too few of its papers.
func Learned(j int64, now Profile, recent []Profile) []string {
	learned := Learnable(recent)
	if now.Relearn || now.Records < MinRecords || len(learned) < MinLearnedRuns {
		return nil
	}
	var out []string
	for _, f := range LearnedFields {
		low := 1.0
		for _, p := range learned {
			low = min(low, p.share(f))
		}
		if low >= UsualShare && now.share(f) < DropFactor*low {
			out = append(out, fmt.Sprintf("journal %d: %s in %.0f%% of its papers, usually in at least %.0f%% (its last %d runs)", j, f, 100*now.share(f), 100*low, len(learned)))
		}
	}
	mean := func(p Profile, n int) float64 { return float64(n) / float64(max(p.Records, 1)) }
	lowNames, lowAbstract := mean(learned[0], learned[0].Names), mean(learned[0], learned[0].AbstractBytes)
	for _, p := range learned[1:] {
		lowNames, lowAbstract = min(lowNames, mean(p, p.Names)), min(lowAbstract, mean(p, p.AbstractBytes))
	}
	if lowNames >= 2 && mean(now, now.Names) <= DropFactor*lowNames {
		out = append(out, fmt.Sprintf("journal %d: authors %.1f names a paper, usually at least %.1f (names no longer split?)", j, mean(now, now.Names), lowNames))
	}
	if lowAbstract >= 200 && mean(now, now.AbstractBytes) < DropFactor*lowAbstract {
		out = append(out, fmt.Sprintf("journal %d: abstracts %.0f bytes a paper, usually at least %.0f (cut, or another field?)", j, mean(now, now.AbstractBytes), lowAbstract))
	}
	return out
}

// CheckLearned is the learning half of the gate: for each journal of
// this run (now), its papers against its recent runs' (newest first). A
// run that gets an error from it exits 4; alarmed are the journals it
// alarmed on (their profiles of this run are marked Alarmed).
func CheckLearned(now map[int64]Profile, recent map[int64][]Profile) (alarmed []int64, err error) {
	var out []string
	for _, j := range slices.Sorted(maps.Keys(now)) {
		if why := Learned(j, now[j], recent[j]); len(why) > 0 {
			out = append(out, why...)
			alarmed = append(alarmed, j)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return alarmed, &Alarm{fmt.Sprintf("quality alarm: %s: the journal's layout has probably changed (the alarm holds until it is back; a change the site made on purpose: run once with --relearn)", strings.Join(out, "; "))}
}
