package mapping

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// placeholderRef is isPlaceholder as first written (lower-case the value, look it up; split
// a value that starts with a digit into its groups of digits): the oracle the faster one
// must agree with on every value.
func placeholderRef(v string) bool {
	if len(v) == 0 || len(v) > 24 {
		return false
	}
	if c := v[0]; c >= '0' && c <= '9' {
		var groups []string
		start := -1
		for i := 0; i <= len(v); i++ {
			if i < len(v) && v[i] >= '0' && v[i] <= '9' {
				if start < 0 {
					start = i
				}
				continue
			}
			if start >= 0 {
				groups = append(groups, v[start:i])
				start = -1
			}
			if i < len(v) && !strings.ContainsRune("./-: T", rune(v[i])) {
				return false
			}
		}
		if len(groups) < 3 {
			return false
		}
		zero := true
		for _, g := range groups {
			if strings.Trim(g, "0") != "" {
				zero = false
			}
		}
		if zero {
			return true
		}
		y, m, d := groups[0], groups[1], groups[2]
		if len(groups[0]) <= 2 {
			y, m, d = groups[2], groups[1], groups[0]
		}
		if len(y) != 4 || strings.TrimLeft(y, "0") != "1" || strings.TrimLeft(m, "0") != "1" || strings.TrimLeft(d, "0") != "1" {
			return false
		}
		for _, g := range groups[3:] {
			if strings.Trim(g, "0") != "" {
				return false
			}
		}
		return true
	}
	return refPlaceholderSet[strings.ToLower(v)]
}

// refPlaceholderSet is Placeholders folded to lower case, as the first version kept them.
var refPlaceholderSet = func() map[string]bool {
	m := make(map[string]bool, len(Placeholders))
	for _, p := range Placeholders {
		m[strings.ToLower(p)] = true
	}
	return m
}()

// placeholderCorpus is values a column holds, placeholders and near misses among them.
func placeholderCorpus() []string {
	vals := []string{"", "Ola", "Nordmann", "ola.nordmann@example.no", "+47 912 34 567", "91234567", "0150",
		"Oslo", "Storgata 1", "1980-05-17", "17.05.1980", "5/17/80", "Male", "Female", "ja", "nei",
		"0.1.00", "1/1/2001", "10.10.1010", "0001-01-02", "1/1/0001 00:00:01", "1/1/0001 00:00:00",
		"0000-00-00 00:00:00.000", "0.0.0.0.0.0.0.0.0.0.0.0", "1.1.1.1", "01.01.0001T", "00:00:00",
		"UNKNOWN", "unKnown", "Un\u212anown", "İkke oppgitt", "\u0130kke angitt", "UN\u212aNOWN\u212a", "ukjent\u0131", "\xffnull", "ukjent", "UKJENT", "Ikke Angitt", "n/a",
		"#n/a", "(None)", "(BLANK)", "(Empty)", "null", "Null", "nULL", "—", "-", "--", "---", "?", "??",
		"Æ", "ø", "Ørsta", "Unspecified ", "Not specified", "NOT SPECIFIED", "Uspesifisert", "123456789012345678901234",
		"0000000000000000000000000", "aaaaaaaaaaaaaaaaaaaaaaaaa", "Ⱥ", "ß", "ǅ"}
	vals = append(vals, Placeholders...)
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "0123456789./-: TnNuUlLkKiI?#()-aAæÆ\u212a\u0130\u0131"
	runes := []rune(alphabet)
	for range 20000 {
		n := rng.IntN(26)
		b := make([]rune, n)
		for i := range b {
			b[i] = runes[rng.IntN(len(runes))]
		}
		vals = append(vals, string(b))
	}
	for _, p := range Placeholders { // placeholders with random case
		b := []byte(p)
		for i := range b {
			if rng.IntN(2) == 0 {
				b[i] = byte(strings.ToUpper(string(b[i]))[0])
			}
		}
		vals = append(vals, string(b))
	}
	return vals
}

// TestPlaceholderAgreesWithReference: the allocation-free isPlaceholder says what the first
// version said, for names, addresses, phones, dates, placeholders in any case, near misses,
// and 20,000 random values of digits, separators and letters (non-ASCII ones among them).
func TestPlaceholderAgreesWithReference(t *testing.T) {
	t.Parallel()
	for _, v := range placeholderCorpus() {
		if got, want := isPlaceholder(v), placeholderRef(v); got != want {
			t.Fatalf("isPlaceholder(%q) = %v, the reference says %v", v, got, want)
		}
	}
}

// FuzzPlaceholder compares isPlaceholder with the reference on any value.
func FuzzPlaceholder(f *testing.F) {
	for _, v := range placeholderCorpus()[:80] {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if got, want := isPlaceholder(v), placeholderRef(v); got != want {
			t.Fatalf("isPlaceholder(%q) = %v, the reference says %v", v, got, want)
		}
	})
}

// TestPlaceholderDoesNotAllocate: the check runs on every value of every row; it allocates
// nothing for the values a contact file holds.
func TestPlaceholderDoesNotAllocate(t *testing.T) {
	vals := []string{"Ola", "NORDMANN", "ola.nordmann@example.no", "91234567", "1980-05-17", "17.05.1980",
		"0000-00-00 00:00:00", "Unspecified", "N/A", "Oslo", "Bjørn", "ÆRØ", "Tromsø"}
	allocs := testing.AllocsPerRun(100, func() {
		for _, v := range vals {
			isPlaceholder(v)
		}
	})
	if allocs != 0 {
		t.Fatalf("isPlaceholder allocated %.1f times for %d values", allocs, len(vals))
	}
}

// BenchmarkIsPlaceholder: the check on a row's worth of typical values.
func BenchmarkIsPlaceholder(b *testing.B) {
	vals := []string{"Ola", "Bjørn", "ola.nordmann@example.no", "+47 912 34 567", "91234567", "Storgata 1",
		"0150", "Oslo", "Male", "1980-05-17", "17.05.1980", "ja"}
	for b.Loop() {
		for _, v := range vals {
			isPlaceholder(v)
		}
	}
}
