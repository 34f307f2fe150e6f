package config

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/litcrawl/litcrawl/internal/textsafe"
)

// Journal is one entry of journals: an id alone (501422), or a section
// with the id, a name, and the journal's own settings, each overriding
// the file's for this journal only:
//
//	journals:
//	  - 501422
//	  - id: 501423
//	    name: Chemical Reviews
//	    nightly: {max_pages: 200}
//	    backfill: {max_pages: 5000, stop_after_repeat_pages: 40}
//	    sinks: [jsonl:out/chem-{date}.jsonl]
//	    fetch: {delay: 3s}
//
// A key left out keeps the file's value (For gives the settings in
// effect). --journal picks journals to crawl; a journal picked that has
// an entry keeps its settings.
type Journal struct {
	ID       int64           `yaml:"id"`
	Name     string          `yaml:"name"`
	Nightly  JournalNightly  `yaml:"nightly"`
	Backfill JournalBackfill `yaml:"backfill"`
	// Sinks replace the file's sinks for this journal's records (list
	// both to have both); nil: the file's.
	Sinks []string     `yaml:"sinks"`
	Fetch JournalFetch `yaml:"fetch"`
}

// JournalNightly overrides nightly.* for one journal (nil: the file's).
type JournalNightly struct {
	StopAfterKnownPages *int `yaml:"stop_after_known_pages"`
	MaxPages            *int `yaml:"max_pages"`
	AuditPages          *int `yaml:"audit_pages"`
}

// JournalBackfill overrides backfill.* for one journal (nil: the file's).
type JournalBackfill struct {
	StopAfterRepeatPages *int `yaml:"stop_after_repeat_pages"`
	MaxPages             *int `yaml:"max_pages"`
}

// JournalFetch overrides fetch.delay for one journal: at least this
// between two requests for its pages. The host's fetch.delay still holds
// between any two requests to the host: a shorter one changes nothing.
type JournalFetch struct {
	Delay *Duration `yaml:"delay"`
}

// UnmarshalYAML reads an entry: a journal id, or a section.
func (j *Journal) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*j = Journal{}
		return n.Decode(&j.ID)
	}
	type plain Journal
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*j = Journal(p)
	return nil
}

// JournalsOf are entries for ids, with no settings of their own.
func JournalsOf(ids ...int64) []Journal {
	out := make([]Journal, len(ids))
	for i, id := range ids {
		out[i] = Journal{ID: id}
	}
	return out
}

// JournalIDs are the ids of the journals the file lists, in its order:
// those crawled when --journal is not given.
func (c *Config) JournalIDs() []int64 {
	ids := make([]int64, len(c.Journals))
	for i, j := range c.Journals {
		ids[i] = j.ID
	}
	return ids
}

// JournalSettings are the settings in effect for one journal: the file's,
// with the journal's own overrides.
type JournalSettings struct {
	ID       int64    `json:"id" yaml:"id"`
	Name     string   `json:"name,omitempty" yaml:"name,omitempty"`
	Nightly  Nightly  `json:"nightly" yaml:"nightly"`
	Backfill Backfill `json:"backfill" yaml:"backfill"`
	// Sinks are the sink URLs its records go to (empty: standard output).
	Sinks []string `json:"sinks" yaml:"sinks"`
	// Fetch.Delay is the least time between two requests for its pages:
	// its own fetch.delay or the host's, whichever is longer.
	Fetch JournalFetchSettings `json:"fetch" yaml:"fetch"`
	// Own are the keys the journal sets itself ("nightly.max_pages", …).
	Own []string `json:"own,omitempty" yaml:"own,omitempty"`
}

// JournalFetchSettings are a journal's fetch settings in effect.
type JournalFetchSettings struct {
	Delay Duration `json:"delay" yaml:"delay"`
}

// For is the settings in effect for journal id (the file's when it has
// no entry).
func (c *Config) For(id int64) JournalSettings {
	s := JournalSettings{ID: id, Nightly: c.Nightly, Backfill: c.Backfill, Sinks: c.Sinks, Fetch: JournalFetchSettings{Delay: c.Fetch.Delay}}
	i := slices.IndexFunc(c.Journals, func(j Journal) bool { return j.ID == id })
	if i < 0 {
		return s
	}
	j := c.Journals[i]
	s.Name, s.Own = j.Name, j.overrides()
	if v := j.Nightly.StopAfterKnownPages; v != nil {
		s.Nightly.StopAfterKnownPages = *v
	}
	if v := j.Nightly.MaxPages; v != nil {
		s.Nightly.MaxPages = *v
	}
	if v := j.Nightly.AuditPages; v != nil {
		s.Nightly.AuditPages = *v
	}
	if v := j.Backfill.StopAfterRepeatPages; v != nil {
		s.Backfill.StopAfterRepeatPages = *v
	}
	if v := j.Backfill.MaxPages; v != nil {
		s.Backfill.MaxPages = *v
	}
	if j.Sinks != nil {
		s.Sinks = j.Sinks
	}
	if v := j.Fetch.Delay; v != nil {
		s.Fetch.Delay = max(*v, c.Fetch.Delay) // the host's delay holds between any two requests
		if *v < c.Fetch.Delay {
			// The file's longer delay is the one in effect: its source.
			s.Own = slices.DeleteFunc(s.Own, func(k string) bool { return k == "fetch.delay" })
		}
	}
	return s
}

// overrides are the keys the entry sets, in the file's order.
func (j Journal) overrides() []string {
	var out []string
	for _, o := range []struct {
		key string
		set bool
	}{
		{"nightly.stop_after_known_pages", j.Nightly.StopAfterKnownPages != nil}, {"nightly.max_pages", j.Nightly.MaxPages != nil},
		{"nightly.audit_pages", j.Nightly.AuditPages != nil},
		{"backfill.stop_after_repeat_pages", j.Backfill.StopAfterRepeatPages != nil}, {"backfill.max_pages", j.Backfill.MaxPages != nil},
		{"sinks", j.Sinks != nil}, {"fetch.delay", j.Fetch.Delay != nil},
	} {
		if o.set {
			out = append(out, o.key)
		}
	}
	return out
}

// JournalSinks are the journals whose records go to sinks of their own,
// by id (nil when none does).
func (c *Config) JournalSinks() map[int64][]string {
	var out map[int64][]string
	for _, j := range c.Journals {
		if j.Sinks != nil {
			if out == nil {
				out = map[int64][]string{}
			}
			out[j.ID] = j.Sinks
		}
	}
	return out
}

// AllSinks are the file's sinks and the journals' own, each destination
// once (sink check, quarantine retry).
func (c *Config) AllSinks() []string {
	urls := slices.Clone(c.Sinks)
	for _, j := range c.Journals {
		for _, u := range j.Sinks {
			if !slices.ContainsFunc(urls, func(o string) bool { return c.same(o) == c.same(u) }) {
				urls = append(urls, u)
			}
		}
	}
	return urls
}

// DropJournalSinks makes every journal's records go to the file's sinks:
// --sink replaces every sink the file names, a journal's too.
func (c *Config) DropJournalSinks() {
	for i := range c.Journals {
		c.Journals[i].Sinks = nil
	}
}

// DropJournalDelays makes every journal's requests paced by fetch.delay
// alone: --delay sets the delay of every journal.
func (c *Config) DropJournalDelays() {
	for i := range c.Journals {
		c.Journals[i].Fetch.Delay = nil
	}
}

// JournalDelays are the journals with a delay of their own, by id (nil
// when none has).
func (c *Config) JournalDelays() map[int64]Duration {
	var out map[int64]Duration
	for _, j := range c.Journals {
		if j.Fetch.Delay != nil && *j.Fetch.Delay > c.Fetch.Delay {
			if out == nil {
				out = map[int64]Duration{}
			}
			out[j.ID] = *j.Fetch.Delay
		}
	}
	return out
}

// maxJournalName bounds a journal's name.
const maxJournalName = 200

// validateJournalIDs checks the entries' ids and names, where journals is
// in the file.
func (c *Config) validateJournalIDs() error {
	for i, j := range c.Journals {
		if j.ID == 0 && (j.Name != "" || j.overrides() != nil) {
			return fmt.Errorf("journals[%d]: no id: expected id: J in an entry with settings", i)
		}
		if err := CheckJournal(j.ID); err != nil {
			return fmt.Errorf("journals[%d]: %d: %w (an entry with settings names it with id:)", i, j.ID, err)
		}
		if k := slices.IndexFunc(c.Journals[:i], func(o Journal) bool { return o.ID == j.ID }); k >= 0 {
			return fmt.Errorf("journals[%d]: %d: listed twice (journals[%d]): expected each journal once", i, j.ID, k)
		}
		if n := j.Name; n != "" && (utf8.RuneCountInString(n) > maxJournalName || !utf8.ValidString(n) || strings.TrimSpace(n) == "" ||
			strings.ContainsFunc(n, textsafe.Unsafe)) {
			return fmt.Errorf("journals[%d] (%d).name: %q: expected a name on one line, up to %d characters", i, j.ID, n, maxJournalName)
		}
	}
	return nil
}

// validateJournalSettings checks each journal's settings in effect by the
// rules of the file's (one rule each, one place), naming the journal in
// the key path: journals[1] (501423).nightly.max_pages.
func (c *Config) validateJournalSettings() error {
	for i, j := range c.Journals {
		if j.overrides() == nil {
			continue
		}
		key := fmt.Sprintf("journals[%d] (%d)", i, j.ID)
		s := c.For(j.ID)
		if err := s.Nightly.validate(key + ".nightly"); err != nil {
			return err
		}
		if err := s.Backfill.validate(key + ".backfill"); err != nil {
			return err
		}
		if j.Sinks != nil && len(j.Sinks) == 0 {
			return fmt.Errorf("%s.sinks: []: expected at least one sink URL (leave sinks out for the file's)", key)
		}
		if err := c.checkSinks(key+".sinks", j.Sinks); err != nil {
			return err
		}
		if d := j.Fetch.Delay; d != nil && (*d < 0 || d.D() > MaxWait) {
			return fmt.Errorf("%s.fetch.delay: %v: expected a duration from 0 to 1h", key, d.D())
		}
	}
	return nil
}
