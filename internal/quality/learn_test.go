package quality

import (
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/record"
)

// profile makes a profile of n records, each with the fields given.
func profile(n int, fields ...string) Profile {
	var p Profile
	for range n {
		r := record.Record{Authors: []string{"Ann Lee", "Bo Chen"}, Abstract: strings.Repeat("x", 300)}
		for _, f := range fields {
			switch f {
			case "citations":
				c := 3
				r.Citations = &c
			case "zone":
				r.Zone = 2
			case "title_cn":
				r.TitleCN = "标题"
			case "one name":
				r.Authors = []string{"Ann Lee, Bo Chen"}
			case "short abstract":
				r.Abstract = "cut"
			}
		}
		p.Add(r)
	}
	return p
}

// TestLearned holds the rule of the learned gate: a field every learned
// run had for at least 80% of the journal's papers, down to less than
// half of that, alarms, naming the journal and the field; so does a
// shape (names a paper, abstract length) halved; a journal with fewer
// than 3 learnable runs, a run of fewer than 5 of its papers, and a run
// marked relearn, do not.
func TestLearned(t *testing.T) {
	usual := []Profile{profile(20, "citations", "zone"), profile(20, "citations", "zone"), profile(20, "citations", "zone")}
	for _, tc := range []struct {
		name   string
		now    Profile
		recent []Profile
		want   []string // substrings of the alarms, in order; nil: none
	}{
		{"the same", profile(20, "citations", "zone"), usual, nil},
		{"citations gone", profile(20, "zone"), usual, []string{"journal 7: citations in 0%"}},
		{"zone and citations gone", profile(20), usual, []string{"zone in 0%", "citations in 0%"}},
		{"half the papers still have it", profile(20, "zone"), []Profile{profile(20, "zone", "citations"), profile(20, "zone", "citations"), profile(10, "zone", "citations")}, []string{"citations"}},
		{"names no longer split", profile(20, "citations", "zone", "one name"), usual, []string{"authors 1.0 names a paper"}},
		{"abstracts cut", profile(20, "citations", "zone", "short abstract"), usual, []string{"abstracts 3 bytes a paper"}},
		{"a field the journal never had", profile(20, "citations", "zone"), usual, nil},
		{"two runs learned only", profile(20), usual[:2], nil},
		{"too few papers this run", profile(4), usual, nil},
		{"runs of too few papers are not learned", profile(20), []Profile{profile(4, "zone"), profile(4, "zone"), profile(20, "zone"), profile(20, "zone")}, nil},
		{"this run relearns", func() Profile { p := profile(20); p.Relearn = true; return p }(), usual, nil},
		{"a run that alarmed is not learned from", profile(20), []Profile{func() Profile { p := profile(20); p.Alarmed = true; return p }(), profile(20, "zone"), profile(20, "zone"), profile(20, "zone")}, []string{"zone in 0%"}},
		{"learned only since a relearn", profile(20), []Profile{profile(20, "zone"), func() Profile { p := profile(20, "zone"); p.Relearn = true; return p }(), profile(20, "zone")}, nil},
	} {
		got := Learned(7, tc.now, tc.recent)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %q, want %d alarms", tc.name, got, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: alarm %q, want it to say %q", tc.name, got[i], w)
			}
		}
	}
}

// A profile read back from a run's summary is held to what a run writes.
func TestProfileValid(t *testing.T) {
	good := profile(5, "zone")
	for _, tc := range []struct {
		p    Profile
		want bool
	}{
		{good, true},
		{Profile{Records: -1}, false},
		{Profile{Records: 2, Fields: map[string]int{"zone": 3}}, false},
		{Profile{Records: 2, Fields: map[string]int{"password": 1}}, false},
		{Profile{Records: 2, Names: -5}, false},
		{Profile{Records: 2, Names: 1 << 40}, false},
		{Profile{Records: 2, AbstractBytes: 1 << 40}, false},
	} {
		if got := tc.p.Valid(); got != tc.want {
			t.Errorf("%+v: valid %v, want %v", tc.p, got, tc.want)
		}
	}
}
