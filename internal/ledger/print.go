package ledger

// PrintSize is the size of a Print.
const PrintSize = 13

// Print is the compact fingerprint of a delivered paper's content that a
// ledger keeps with it, so that a later read of the paper can tell whether
// the site changed it (package engine makes and compares prints: its
// revision rule). To a ledger it is opaque bytes; the zero Print means
// none (a paper recorded before prints were kept, or by a ledger that was
// given none).
type Print [PrintSize]byte

// IsZero reports whether p is no print.
func (p Print) IsZero() bool { return p == Print{} }

// Seen is what a ledger knows of one paper: whether it was delivered, the
// print recorded with it (zero when none was), and whether it was found
// by its own id (for an id "doi:…", whether that DOI is known), not only
// by its DOI: a paper
// known only by a DOI another paper delivered under its own site id is
// that other paper to the ledger, and has no print of its own.
type Seen struct {
	Delivery Delivery
	Print    Print
	ByID     bool
}

// Deliveries is the Delivery of each.
func Deliveries(seen []Seen) []Delivery {
	out := make([]Delivery, len(seen))
	for i, s := range seen {
		out[i] = s.Delivery
	}
	return out
}
