package engine

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/record"
)

func paper() record.Record {
	c := 4
	return record.Record{ID: "142211052", DOI: "10.1/x", Title: "A study", Authors: []string{"A. B", "C. D"},
		Abstract: "Whole abstract.", Published: "2024-09-12", Journal: &record.Journal{ID: 501422, Name: "J", Volume: "12"},
		ImpactFactor: 1.5, Zone: 3, Citations: &c}
}

// Each rule of judge, one line each: what a later read of a delivered
// paper does.
func TestJudge(t *testing.T) {
	cites := func(n int) func(*record.Record) { return func(r *record.Record) { r.Citations = &n } }
	for _, tt := range []struct {
		name      string
		old, read func(*record.Record)
		citations bool
		want      verdict
		changed   []string
	}{
		{"the same content", nil, nil, false, same, nil},
		{"a typo in the title fixed", nil, func(r *record.Record) { r.Title = "A Study" }, false, revise, []string{"title"}},
		{"a Chinese abstract added", nil, func(r *record.Record) { r.AbstractCN = "摘要" }, false, revise, []string{"abstract_cn"}},
		{"a DOI registered", func(r *record.Record) { r.DOI = "" }, nil, false, revise, []string{"doi"}},
		{"the citation count alone", nil, cites(9), false, same, nil},
		{"the citation count, with updates.citations", nil, cites(9), true, revise, []string{"citations"}},
		{"an abstract gone (the JSON missing today)", nil, func(r *record.Record) { r.Abstract = "" }, false, poorer, nil},
		{"a cut capture of a whole record", nil, func(r *record.Record) { r.Abstract = "Whole"; r.AddWarning(record.WarnTextTruncated) }, false, poorer, []string{"abstract"}},
		{"a cut abstract now whole", func(r *record.Record) { r.Abstract = "Whole"; r.AddWarning(record.WarnTextTruncated) }, nil, false, revise, []string{"abstract"}},
		{"two cut captures", func(r *record.Record) { r.AddWarning(record.WarnTextTruncated) }, func(r *record.Record) { r.Abstract = "Who"; r.AddWarning(record.WarnTextTruncated) }, false, poorer, []string{"abstract"}},
		{"a read without the JSON of a paper with its site id", nil, func(r *record.Record) { r.ID = "doi:10.1/x"; r.Title = "A Study" }, false, poorer, []string{"title"}},
		{"the site id appears", func(r *record.Record) { r.ID = "doi:10.1/x" }, nil, false, revise, nil},
		{"a ranking line appears", func(r *record.Record) { r.Zone, r.ImpactFactor = 0, 0 }, nil, false, revise, []string{"ranking"}},
	} {
		o, n := paper(), paper()
		if tt.old != nil {
			tt.old(&o)
		}
		if tt.read != nil {
			tt.read(&n)
		}
		old := fingerprint(&o).withRevision(3)
		got, changed := judge(old, fingerprint(&n), tt.citations)
		if got != tt.want || !slices.Equal(changed.names(), tt.changed) {
			t.Errorf("%s: %v %v; want %v %v", tt.name, got, changed.names(), tt.want, tt.changed)
		}
	}
	if v, _ := judge(ledger.Print{}, fingerprint(new(record.Record)), false); v != baseline {
		t.Errorf("no print: %v; want baseline", v)
	}
}

// A print keeps its revision, and says what the record has.
func TestPrintRevision(t *testing.T) {
	r := paper()
	p := fprint(fingerprint(&r).withRevision(7))
	if p.revision() != 7 || !p.siteID() || p.cut() || p.has()&(1<<fieldCitations) == 0 || p.has()&(1<<1) != 0 {
		t.Errorf("print %x: revision %d site id %v cut %v has %v", p, p.revision(), p.siteID(), p.cut(), p.has().names())
	}
	if fprint(p.withRevision(maxRevision+5)).revision() != maxRevision {
		t.Error("a revision past the most a print holds")
	}
}

// decide delivers a changed paper as its next revision, naming what
// changed and the id it replaces, and records the new print; a paper the
// group already sends is not sent twice.
func TestDecideRevisions(t *testing.T) {
	o := paper()
	o.ID, o.Title = "doi:10.1/x", "A study"
	old := fingerprint(&o).withRevision(1)
	n := paper()
	n.Title = "A Study"
	recs := []record.Record{n}
	papers := []ledger.Paper{{ID: n.ID, DOI: n.DOI}}
	var sent sentInGroup
	d := decide(recs, papers, []ledger.Seen{{Delivery: ledger.DeliveredBefore, Print: old}}, Item{}, &sent)
	if len(d.send) != 1 || d.updated != 1 {
		t.Fatalf("sent %d records, %d updated", len(d.send), d.updated)
	}
	got := d.send[0]
	if got.Revision != 2 || !slices.Equal(got.Changed, []string{"title", "id"}) || got.Replaces != "doi:10.1/x" {
		t.Errorf("revision %d changed %v replaces %q; want 2 [title id] doi:10.1/x", got.Revision, got.Changed, got.Replaces)
	}
	if fprint(papers[0].Print).revision() != 2 {
		t.Errorf("the print to record is revision %d", fprint(papers[0].Print).revision())
	}
	// The same page again in the group: sent already.
	d = decide([]record.Record{n}, []ledger.Paper{{ID: n.ID, DOI: n.DOI}}, []ledger.Seen{{Delivery: ledger.DeliveredBefore, Print: old}}, Item{}, &sent)
	if len(d.send) != 0 {
		t.Errorf("a revision the group sends already was sent again")
	}
}

// Every name a changed list can hold is one the JSON Schema allows.
func TestChangedNamesAreTheSchemas(t *testing.T) {
	want := append(slices.Clone(fieldNames[:]), "id", "content")
	if !slices.Equal(want, schemaChangedEnum(t)) {
		t.Errorf("changed names %v; the schema's enum %v", want, schemaChangedEnum(t))
	}
}

func schemaChangedEnum(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../schema/record.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties struct {
			Changed struct {
				Items struct {
					Enum []string `json:"enum"`
				} `json:"items"`
			} `json:"changed"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return s.Properties.Changed.Items.Enum
}

// --redeliver on a day the site shows less sends the paper as it is
// then, as its next revision with its print, so that the next whole read
// is a change again (the sinks are not left with the poorer record); a
// read without the JSON of a paper delivered under its site id is not
// sent (it would be another paper).
func TestRedeliverPoorerThenWhole(t *testing.T) {
	whole := paper()
	old := fingerprint(&whole).withRevision(1)
	poor := paper()
	poor.DOI = ""
	var sent sentInGroup
	papers := []ledger.Paper{{ID: poor.ID}}
	d := decide([]record.Record{poor}, papers, []ledger.Seen{{Delivery: ledger.DeliveredBefore, Print: old}}, Item{Redeliver: true}, &sent)
	if len(d.send) != 1 || d.send[0].Revision != 2 || !slices.Equal(d.send[0].Changed, []string{"doi"}) || fprint(papers[0].Print).revision() != 2 {
		t.Fatalf("redelivered poorer: %+v, print %x", d.send, papers[0].Print)
	}
	sent = nil
	papers2 := []ledger.Paper{{ID: whole.ID, DOI: whole.DOI}}
	d = decide([]record.Record{whole}, papers2, []ledger.Seen{{Delivery: ledger.DeliveredBefore, Print: papers[0].Print}}, Item{}, &sent)
	if len(d.send) != 1 || d.send[0].Revision != 3 {
		t.Fatalf("the whole read after: %+v", d.send)
	}
	noJSON := paper()
	noJSON.ID = "doi:10.1/x"
	sent = nil
	d = decide([]record.Record{noJSON}, []ledger.Paper{{ID: noJSON.ID, DOI: noJSON.DOI}}, []ledger.Seen{{Delivery: ledger.DeliveredBefore, Print: old}}, Item{Redeliver: true}, &sent)
	if len(d.send) != 0 || d.poorer != 1 {
		t.Fatalf("a read without the JSON redelivered: %+v", d.send)
	}
}

// A paper known to the ledger only by a DOI another paper was delivered
// under (two site ids the site gave one DOI) gets no print of its own:
// it stays known, and a later change of it is never a "revision" of an id
// no sink has.
func TestNoPrintForAPaperKnownOnlyByAnothersDOI(t *testing.T) {
	b := paper()
	b.ID = "43"
	papers := []ledger.Paper{{ID: b.ID, DOI: b.DOI}}
	var sent sentInGroup
	d := decide([]record.Record{b}, papers, []ledger.Seen{{Delivery: ledger.DeliveredBefore}}, Item{}, &sent)
	if len(d.send) != 0 || !papers[0].Print.IsZero() {
		t.Fatalf("sent %v, print %x; want nothing and none", d.send, papers[0].Print)
	}
	// Known by its own id, without a print (delivered before prints were
	// kept): its first print is recorded, nothing sent.
	papers = []ledger.Paper{{ID: b.ID, DOI: b.DOI}}
	sent = nil
	d = decide([]record.Record{b}, papers, []ledger.Seen{{Delivery: ledger.DeliveredBefore, ByID: true}}, Item{}, &sent)
	if len(d.send) != 0 || fprint(papers[0].Print).revision() != 1 {
		t.Fatalf("sent %v, print %x; want nothing and a first print", d.send, papers[0].Print)
	}
}
