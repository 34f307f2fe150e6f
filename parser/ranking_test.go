package parser

import "testing"

// TestRankingLine holds the ranking line's rule: any combination and order
// of impact factor, zone, subject and JCR quartile with category, alone or
// before the date/DOI line; anything else on the line makes it text.
func TestRankingLine(t *testing.T) {
	type want struct {
		impact      float64
		hasIF       bool
		zone        int
		subject     string
		quartile    string
		category    string
		published   string
		doi         string
		notARanking bool
	}
	for _, tc := range []struct {
		line string
		want want
	}{
		{"IF 2 4区 计算机科学", want{impact: 2, hasIF: true, zone: 4, subject: "计算机科学"}},
		{"IF 0.6", want{impact: 0.6, hasIF: true}},
		{"3区 计算机科学", want{zone: 3, subject: "计算机科学"}},
		{"3区 工程技术", want{zone: 3, subject: "工程技术"}},
		{"4 区 计算机科学", want{zone: 4, subject: "计算机科学"}},
		{"3区 计算机科学 Q3 COMPUTER SCIENCE, INFORMATION SYSTEMS", want{zone: 3, subject: "计算机科学", quartile: "Q3", category: "COMPUTER SCIENCE, INFORMATION SYSTEMS"}},
		{"IF 1.2 4区 计算机科学 Q3 ENGINEERING, ELECTRICAL & ELECTRONIC Pub Date : 2024-03-01 DOI: 10.23919/ICN.2024.0001",
			want{impact: 1.2, hasIF: true, zone: 4, subject: "计算机科学", quartile: "Q3", category: "ENGINEERING, ELECTRICAL & ELECTRONIC", published: "2024-03-01", doi: "10.23919/ICN.2024.0001"}},
		{"3区 计算机科学 Q3 COMPUTER SCIENCE, INFORMATION SYSTEMS Pub Date : 2024-03-01 DOI: 10.1109/tst.2024.3",
			want{zone: 3, subject: "计算机科学", quartile: "Q3", category: "COMPUTER SCIENCE, INFORMATION SYSTEMS", published: "2024-03-01", doi: "10.1109/tst.2024.3"}},
		{"2区 工程技术 Pub Date : 2024-05-06 DOI: 10.1016/j.x.2024.1", want{zone: 2, subject: "工程技术", published: "2024-05-06", doi: "10.1016/j.x.2024.1"}},
		{"Q2 COMPUTER SCIENCE, THEORY & METHODS", want{quartile: "Q2", category: "COMPUTER SCIENCE, THEORY & METHODS"}},
		{"JCR Q1 COMPUTER SCIENCE, ARTIFICIAL INTELLIGENCE", want{quartile: "Q1", category: "COMPUTER SCIENCE, ARTIFICIAL INTELLIGENCE"}},
		{"IF: 3.5 Q1 ENGINEERING, CIVIL", want{impact: 3.5, hasIF: true, quartile: "Q1", category: "ENGINEERING, CIVIL"}},
		{"IF：3.5 1区 医学", want{impact: 3.5, hasIF: true, zone: 1, subject: "医学"}},
		{"计算机科学 2区 IF 5.1", want{impact: 5.1, hasIF: true, zone: 2, subject: "计算机科学"}},
		{"Q1 COMPUTER SCIENCE, SOFTWARE ENGINEERING 1区 计算机科学 IF 7", want{impact: 7, hasIF: true, zone: 1, subject: "计算机科学", quartile: "Q1", category: "COMPUTER SCIENCE, SOFTWARE ENGINEERING"}},
		{"Q3 TELECOMMUNICATIONS IF 3.2 2区 物理与天体物理", want{impact: 3.2, hasIF: true, zone: 2, subject: "物理与天体物理", quartile: "Q3", category: "TELECOMMUNICATIONS"}},
		{"IF2.3 1区", want{impact: 2.3, hasIF: true, zone: 1}},
		{"IF 2.1 9区 计算机科学", want{impact: 2.1, hasIF: true, subject: "计算机科学"}}, // a zone past 4 is read, not kept
		// Text, not a ranking line.
		{"IF Statements Considered Harmful", want{notARanking: true}},
		{"Q3 Results Are In", want{notARanking: true}},
		{"计算机科学", want{notARanking: true}},
		{"3区 计算机科学 3区", want{notARanking: true}},
		{"IF 2 IF 3", want{notARanking: true}},
		{"IF 2 and more words", want{notARanking: true}},
		{"3区 computer science", want{notARanking: true}},
		{"", want{notARanking: true}},
	} {
		h, ok := parseRanking(tc.line)
		if ok == tc.want.notARanking {
			t.Errorf("%q: read as a ranking line %v, want %v", tc.line, ok, !tc.want.notARanking)
			continue
		}
		got := want{h.impact, h.hasImpact, h.zone, h.subject, h.jcrQuartile, h.jcrCategory, h.published, h.doi, !ok}
		if got != tc.want {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.line, got, tc.want)
		}
	}
}

// TestRankingLineClassified: a ranking line is its own kind of line, and
// one glued before the date/DOI line gives no journal name.
func TestRankingLineClassified(t *testing.T) {
	for _, tc := range []struct {
		text    string
		kind    lineKind
		journal string
	}{
		{"3区 计算机科学", kindImpact, ""},
		{"3区 计算机科学 Q3 COMPUTER SCIENCE, INFORMATION SYSTEMS Pub Date : 2024-03-01 DOI: 10.1109/x.1", kindImpact, ""},
		{"IEEE Access Pub Date : 2024-03-01 DOI: 10.1109/x.1", kindMeta, "IEEE Access"},
		{"IF Statements Considered Harmful", kindText, ""},
	} {
		l := classify(tc.text)
		if l.kind != tc.kind {
			t.Errorf("%q: kind %d, want %d", tc.text, l.kind, tc.kind)
		}
		if l.head != nil && l.head.journal != tc.journal {
			t.Errorf("%q: journal %q, want %q", tc.text, l.head.journal, tc.journal)
		}
	}
	// In parseMeta, the text before "Pub Date" that is a ranking line is
	// read as one, never as the journal.
	h, ok := parseMeta("1区 工程技术 Q1 ENGINEERING, CIVIL Pub Date : 2024-01-02 DOI: 10.1/x")
	if !ok || h.journal != "" || h.zone != 1 || h.jcrCategory != "ENGINEERING, CIVIL" {
		t.Errorf("glued ranking line: %+v", h)
	}
}

// TestHasRankingPart: a field holding a zone or an impact factor holds
// page text.
func TestHasRankingPart(t *testing.T) {
	for s, want := range map[string]bool{
		"3区 计算机科学 Q3 Computer Science": true,
		"IF 2.4 Journal of Things":     true,
		"Journal of Testing":           false,
		"IFAC-PapersOnLine":            false,
		"地区发展研究":                       false,
		"Medicine IF you can":          false,
	} {
		if got := hasRankingPart(s); got != want {
			t.Errorf("hasRankingPart(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestRankingThenJournal: a ranking line's parts before a journal's name,
// in the text before the site's Pub Date label.
func TestRankingThenJournal(t *testing.T) {
	for _, tc := range []struct {
		text, journal, subject string
		zone                   int
		ok                     bool
	}{
		{"IF 2 2区 物理与天体物理 Journal of Trials", "Journal of Trials", "物理与天体物理", 2, true},
		{"IF 2 2区 物理与天体物理 物理学报", "物理学报", "物理与天体物理", 2, true},
		{"3区 工程技术 IEEE Access", "IEEE Access", "工程技术", 3, true},
		{"Journal of Trials", "", "", 0, false},
		{"IF 2 2区 物理与天体物理", "", "", 0, false}, // a ranking line alone: parseRanking's
	} {
		h, journal, ok := rankingThenJournal(tc.text)
		if ok != tc.ok || journal != tc.journal || h.subject != tc.subject || h.zone != tc.zone {
			t.Errorf("%q: %q %q %d %v, want %q %q %d %v", tc.text, journal, h.subject, h.zone, ok, tc.journal, tc.subject, tc.zone, tc.ok)
		}
	}
}
