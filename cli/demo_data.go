package cli

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/xuri/excelize/v2"
	"golang.org/x/text/encoding/charmap"

	"github.com/subsync/subsync/mapping"
)

// The demo's sample data: Norwegian contacts, generated from a fixed seed so that every run
// of `subsync demo` reads the same files and prints the same numbers.
const (
	demoSeed     = 2024
	demoCSVRows  = 300 // data rows of the CSV file, bad ones and the duplicate included
	demoXLSXRows = 120 // data rows of the workbook

	demoSheet         = "Medlemmer"
	demoXLSXHeaderRow = 3 // a title on row 1, an empty row 2, the column names on row 3

	demoUnsubscribe = 3 // CSV contacts the service marks unsubscribed
	demoBounce      = 2 // and bounced
	demoLeave       = 2 // CSV contacts deleted in the CRM before the last sync
)

// demoHeader is the header of both sample files: the column names of a Norwegian export,
// which subsync maps by their names without a mapping file.
var demoHeader = []string{"E-post", "Fornavn", "Etternavn", "Mobil", "Postnummer", "Poststed", "Fødselsdato"}

// demoKeyColumn is the CSV's first column: the CRM's customer number, the sync's source key.
const demoKeyColumn = "Kundenr"

// demoCSVMapping is the mapping of the CSV file: its columns by name, the customer number as
// the source key (external_id), and the second sighting of an address left out (duplicates =
// "first"), so that every row read is counted once.
func demoCSVMapping() mapping.Spec {
	return mapping.Spec{Duplicates: mapping.DuplicatesFirst, Columns: map[string]mapping.Column{
		demoKeyColumn: {To: "external_id"}, "E-post": {To: "email"}, "Fornavn": {To: "firstname"},
		"Etternavn": {To: "lastname"}, "Mobil": {To: "phone"}, "Postnummer": {To: "zip"}, "Poststed": {To: "city"},
		"Fødselsdato": {To: "birthday"}}}
}

// demoContact is one data row of a sample file, with what it is built to show.
type demoContact struct {
	Key                                   string // the CRM's customer number (CSV only)
	Email, First, Last, Mobile, Zip, City string
	Birthday                              string // YYYY-MM-DD (the CSV writes dd.mm.yyyy), or a bad date as written
	// Bad is the reject code the row is built to earn (a mapping.Code…), "" for a good row.
	Bad string
	// Dup marks a second row for an e-mail address seen earlier in the file.
	Dup bool
}

// demoSample is the generated sample data.
type demoSample struct {
	CSV  []demoContact
	XLSX []demoContact
	// Unsubscribe and Bounce are e-mails of good CSV rows that the service marks
	// unsubscribed or bounced between the import and the sync.
	Unsubscribe, Bounce []string
	// Leave are e-mails of good CSV rows deleted in the CRM before the last sync; Move is a
	// good CSV row whose person changes address then, to MovedTo.
	Leave   []string
	Move    string
	MovedTo string
}

var (
	demoFirstNames = []string{"Ola", "Kari", "Per", "Ingrid", "Bjørn", "Åse", "Kjersti", "Håkon", "Sigrid", "Ørjan",
		"Tore", "Solveig", "Marius", "Nora", "Emma", "Jakob", "Aksel", "Ingeborg", "Even", "Live", "Sindre", "Tuva",
		"Kåre", "Synnøve", "Eirik", "Maja", "Henrik", "Ragnhild", "Jørgen", "Frøydis", "Mathilde", "Sondre"}
	demoLastNames = []string{"Hansen", "Johansen", "Olsen", "Larsen", "Andersen", "Pedersen", "Nilsen", "Kristiansen",
		"Jensen", "Karlsen", "Johnsen", "Pettersen", "Eriksen", "Berg", "Haugen", "Hagen", "Johannessen", "Dahl",
		"Jørgensen", "Halvorsen", "Sæther", "Løvås", "Ødegård", "Brække", "Strøm", "Bråthen", "Aasen", "Fjeld"}
	demoPlaces = [][2]string{{"0150", "Oslo"}, {"0468", "Oslo"}, {"5003", "Bergen"}, {"7011", "Trondheim"},
		{"4006", "Stavanger"}, {"9008", "Tromsø"}, {"4608", "Kristiansand"}, {"3015", "Drammen"},
		{"1606", "Fredrikstad"}, {"2317", "Hamar"}, {"6002", "Ålesund"}, {"8006", "Bodø"}, {"2609", "Lillehammer"},
		{"3110", "Tønsberg"}, {"1530", "Moss"}, {"5501", "Haugesund"}}
	demoDomains = []string{"example.com", "example.org", "example.net"}
)

// newDemoSample generates the sample data from seed.
func newDemoSample(seed uint64) demoSample {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	used := map[string]bool{}
	var s demoSample
	s.CSV = demoContacts(rng, used, demoCSVRows)
	s.XLSX = demoContacts(rng, used, demoXLSXRows)
	for i := range s.CSV {
		s.CSV[i].Key = fmt.Sprint(10001 + i)
	}

	// The CSV's bad rows, at distinct random places after the first few rows. The XLSX has
	// one: a row without a usable e-mail address.
	defects := []func(c *demoContact){
		func(c *demoContact) { c.Email, c.Bad = strings.Replace(c.Email, "@", ".", 1), mapping.CodeInvalidEmail },
		func(c *demoContact) {
			c.Email, c.Bad = strings.Replace(c.Email, "@", "@@", 1), mapping.CodeInvalidEmail
		},
		func(c *demoContact) { c.Email, c.Bad = strings.Replace(c.Email, ".", " ", 1), mapping.CodeInvalidEmail },
		func(c *demoContact) { c.Email, c.Bad = "", mapping.CodeMissingEmail },
		func(c *demoContact) { c.Birthday, c.Bad = "1987-02-31", mapping.CodeInvalidDate },
		func(c *demoContact) { c.Mobile, c.Bad = "12 34", mapping.CodeInvalidPhone },
	}
	pos := rng.Perm(len(s.CSV) - 10)
	for i, defect := range defects {
		defect(&s.CSV[10+pos[i]])
	}
	// A second row for an earlier, good contact: the address in other letter case, as a
	// hand-edited export has it.
	dup := 10 + pos[len(defects)]
	orig := rng.IntN(dup)
	for s.CSV[orig].Bad != "" {
		orig = rng.IntN(dup)
	}
	s.CSV[dup] = s.CSV[orig]
	s.CSV[dup].Email = strings.ToUpper(s.CSV[orig].Email[:1]) + s.CSV[orig].Email[1:]
	s.CSV[dup].Dup = true
	bad := rng.IntN(len(s.XLSX))
	s.XLSX[bad].Email, s.XLSX[bad].Bad = "", mapping.CodeMissingEmail

	// People the service marks unsubscribed and bounced: good rows whose address appears once.
	for _, i := range rng.Perm(len(s.CSV)) {
		c := s.CSV[i]
		if c.Bad != "" || strings.EqualFold(c.Email, s.CSV[dup].Email) {
			continue
		}
		switch {
		case len(s.Unsubscribe) < demoUnsubscribe:
			s.Unsubscribe = append(s.Unsubscribe, c.Email)
		case len(s.Bounce) < demoBounce:
			s.Bounce = append(s.Bounce, c.Email)
		case len(s.Leave) < demoLeave:
			s.Leave = append(s.Leave, c.Email)
		case s.Move == "":
			s.Move, s.MovedTo = c.Email, strings.Replace(c.Email, "@", ".ny@", 1)
		}
	}
	return s
}

// moveKey is the customer number of the contact who changes address.
func (s demoSample) moveKey() string {
	for _, c := range s.CSV {
		if c.Email == s.Move {
			return c.Key
		}
	}
	return ""
}

// changedCSV is the CSV's rows after the CRM changed: the people who left deleted, the one who
// moved with their new address.
func (s demoSample) changedCSV() []demoContact {
	var out []demoContact
	for _, c := range s.CSV {
		switch {
		case slices.Contains(s.Leave, c.Email):
			continue
		case c.Email == s.Move:
			c.Email = s.MovedTo
		}
		out = append(out, c)
	}
	return out
}

// demoContacts returns n good contacts with addresses not in used.
func demoContacts(rng *rand.Rand, used map[string]bool, n int) []demoContact {
	out := make([]demoContact, n)
	for i := range out {
		first := demoFirstNames[rng.IntN(len(demoFirstNames))]
		last := demoLastNames[rng.IntN(len(demoLastNames))]
		local := asciiName(first) + "." + asciiName(last)
		domain := demoDomains[rng.IntN(len(demoDomains))]
		email := local + "@" + domain
		for k := 2; used[email]; k++ {
			email = fmt.Sprintf("%s%d@%s", local, k, domain)
		}
		used[email] = true
		place := demoPlaces[rng.IntN(len(demoPlaces))]
		c := demoContact{Email: email, First: first, Last: last, Zip: place[0], City: place[1]}
		if rng.IntN(100) < 85 {
			c.Mobile = demoMobile(rng)
		}
		if rng.IntN(100) < 80 {
			c.Birthday = time.Date(1945, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, rng.IntN(60*365)).Format(time.DateOnly)
		}
		out[i] = c
	}
	return out
}

// demoMobile returns a Norwegian mobile number (8 digits starting with 4 or 9) in one of the
// ways people write them.
func demoMobile(rng *rand.Rand) string {
	d := fmt.Sprintf("%d%07d", []int{4, 9}[rng.IntN(2)], rng.IntN(10_000_000))
	switch rng.IntN(4) {
	case 0:
		return d
	case 1:
		return d[:3] + " " + d[3:5] + " " + d[5:]
	case 2:
		return "+47 " + d[:3] + " " + d[3:5] + " " + d[5:]
	}
	return "+47" + d
}

// asciiName spells a name as the part of an e-mail address: lower case, æ ø å written out.
func asciiName(s string) string {
	return strings.NewReplacer("æ", "ae", "ø", "o", "å", "a").Replace(strings.ToLower(s))
}

// writeDemoCSV writes the contacts as a Norwegian Excel would export them: Windows-1252,
// semicolons, CRLF line ends, dates as dd.mm.yyyy.
func writeDemoCSV(path string, rows []demoContact) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Comma, w.UseCRLF = ';', true
	_ = w.Write(append([]string{demoKeyColumn}, demoHeader...))
	for _, c := range rows {
		_ = w.Write([]string{c.Key, c.Email, c.First, c.Last, c.Mobile, c.Zip, c.City, norwegianDate(c.Birthday)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	data, err := charmap.Windows1252.NewEncoder().Bytes(buf.Bytes())
	if err != nil {
		return fmt.Errorf("encode %s as Windows-1252: %w", path, err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// norwegianDate writes YYYY-MM-DD as dd.mm.yyyy, the way Norwegian spreadsheets do (also an
// impossible date such as 1987-02-31).
func norwegianDate(iso string) string {
	p := strings.Split(iso, "-")
	if len(p) != 3 {
		return iso
	}
	return p[2] + "." + p[1] + "." + p[0]
}

// writeDemoXLSX writes the contacts as a workbook with a title row above the header and
// birthdays as real date cells.
func writeDemoXLSX(path string, rows []demoContact) (err error) {
	f := excelize.NewFile()
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close %s: %w", path, cerr)
		}
	}()
	if err := f.SetSheetName("Sheet1", demoSheet); err != nil {
		return fmt.Errorf("name the worksheet: %w", err)
	}
	date := "dd.mm.yyyy"
	dateStyle, err := f.NewStyle(&excelize.Style{CustomNumFmt: &date})
	if err != nil {
		return fmt.Errorf("date style: %w", err)
	}
	if err := f.SetCellValue(demoSheet, "A1", "Medlemsliste – Turlaget (eksportert fra medlemsregisteret)"); err != nil {
		return fmt.Errorf("title: %w", err)
	}
	set := func(row int, values []any) error {
		cell, err := excelize.CoordinatesToCellName(1, row)
		if err != nil {
			return err
		}
		return f.SetSheetRow(demoSheet, cell, &values)
	}
	header := make([]any, len(demoHeader))
	for i, h := range demoHeader {
		header[i] = h
	}
	if err := set(demoXLSXHeaderRow, header); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	for i, c := range rows {
		row := demoXLSXHeaderRow + 1 + i
		values := []any{c.Email, c.First, c.Last, c.Mobile, c.Zip, c.City}
		if t, perr := time.Parse(time.DateOnly, c.Birthday); perr == nil {
			values = append(values, t)
		}
		if err := set(row, values); err != nil {
			return fmt.Errorf("row %d: %w", row, err)
		}
		if err := f.SetCellStyle(demoSheet, fmt.Sprintf("G%d", row), fmt.Sprintf("G%d", row), dateStyle); err != nil {
			return fmt.Errorf("row %d: %w", row, err)
		}
	}
	if err := f.SaveAs(path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
