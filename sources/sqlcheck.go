package sources

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
)

// ErrQueryRefused is wrapped by the error for a source query that is not exactly one
// statement that reads. A source is only ever read: the query is refused before it is sent.
var ErrQueryRefused = errors.New("the source query must be one SELECT (or WITH … SELECT) statement that only reads")

// ErrQueryNeverSucceeds is wrapped by the error of a source query that no retry can fix: it
// is refused (ErrQueryRefused), or the database answered it with a syntax error, a missing
// table or column, a refused write, a missing privilege or a refused user or password; or its
// DSN cannot be read.
var ErrQueryNeverSucceeds = errors.New("the source query can never succeed")

// writeWords are the words that, outside string literals, quoted identifiers and comments,
// make a single SELECT or WITH statement more than a read: a data-modifying WITH (Postgres),
// SELECT … INTO (a new table in Postgres, a file in MySQL), FOR UPDATE. Any other writing
// statement (DROP, TRUNCATE, ATTACH, PRAGMA …) does not start with SELECT or WITH, or is a
// second statement, and is refused for that.
var writeWords = map[string]bool{"insert": true, "update": true, "delete": true, "merge": true, "into": true}

// sqlDialect is how one database reads the lexical parts of a query that can hide text.
type sqlDialect struct {
	backslashStrings bool // MySQL: \ escapes in '…' and "…"
	doubleIsString   bool // MySQL: "…" is a string
	hashComments     bool // MySQL: # starts a line comment
	dashNeedsSpace   bool // MySQL: -- is a comment only when followed by white space
	nestedComments   bool // Postgres: /* /* */ */ nests
	dollarQuotes     bool // Postgres: $tag$…$tag$
	escapeStrings    bool // Postgres: E'…' has \ escapes
	brackets         bool // SQLite: [identifier]
	execComments     bool // MySQL, MariaDB: /*! … */ and /*M! … */ are code, not comments
}

func sqlDialectsOf(driver string) []sqlDialect {
	pg := sqlDialect{nestedComments: true, dollarQuotes: true, escapeStrings: true}
	my := sqlDialect{backslashStrings: true, doubleIsString: true, hashComments: true, dashNeedsSpace: true, execComments: true}
	lite := sqlDialect{brackets: true}
	switch {
	case isPostgres(driver):
		return []sqlDialect{pg}
	case driver == "mysql":
		return []sqlDialect{my}
	case driver == "sqlite":
		return []sqlDialect{lite}
	}
	// Another driver: the query must pass as each of them reads it.
	return []sqlDialect{pg, my, lite}
}

// CheckReadQuery accepts exactly one statement that only reads: a SELECT, or WITH … SELECT,
// with at most a trailing semicolon. It reads the query with the driver's own lexical rules
// (comments, string literals, quoted identifiers, dollar quoting) and refuses a second
// statement and any word that writes (see writeWords) outside literals and quoted names.
// Errors wrap ErrQueryRefused and ErrQueryNeverSucceeds, and say why.
//
// This is a guard, not a sandbox: give subsync a database user that may only read.
func CheckReadQuery(driver, query string) error {
	for _, d := range sqlDialectsOf(driver) {
		if err := d.check(query); err != nil {
			return &refusedError{reason: err.Error()}
		}
	}
	return nil
}

// refusedError is a query CheckReadQuery refused; it is ErrQueryRefused and
// ErrQueryNeverSucceeds.
type refusedError struct{ reason string }

func (e *refusedError) Error() string { return ErrQueryRefused.Error() + ": " + e.reason }
func (e *refusedError) Is(target error) bool {
	return target == ErrQueryRefused || target == ErrQueryNeverSucceeds
}

func (d sqlDialect) check(q string) error {
	var words []string // the query's bare words, lower case, in order
	ended := false     // a semicolon ended the statement
	inExec := false    // within an executable comment (execComment)
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case inExec && c == '*' && i+1 < len(q) && q[i+1] == '/':
			inExec = false // the executable comment's end; what it held was read as code
			i += 2
			continue
		case c == '-' && i+1 < len(q) && q[i+1] == '-' && (!d.dashNeedsSpace || i+2 >= len(q) || q[i+2] <= ' '),
			c == '#' && d.hashComments:
			for i < len(q) && q[i] != '\n' {
				i++
			}
			continue
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			if n := d.execComment(q[i:]); n > 0 {
				if inExec {
					return errors.New("a /*! comment holds another")
				}
				inExec = true
				i += n
				continue
			}
			end, err := d.blockComment(q, i)
			if err != nil {
				return err
			}
			i = end
			continue
		}
		if ended {
			return errors.New("it holds more than one statement")
		}
		switch {
		case c == ';':
			ended = true
			i++
		case c == '\'':
			end, err := quoted(q, i, '\'', d.backslashStrings)
			if err != nil {
				return err
			}
			i = end
		case (c == 'e' || c == 'E') && d.escapeStrings && i+1 < len(q) && q[i+1] == '\'' && !wordBefore(q, i):
			end, err := quoted(q, i+1, '\'', true)
			if err != nil {
				return err
			}
			i = end
		case c == '"':
			end, err := quoted(q, i, '"', d.doubleIsString && d.backslashStrings)
			if err != nil {
				return err
			}
			i = end
		case c == '`':
			end, err := quoted(q, i, '`', false)
			if err != nil {
				return err
			}
			i = end
		case c == '[' && d.brackets:
			end := strings.IndexByte(q[i+1:], ']')
			if end < 0 {
				return errors.New("a [ is not closed")
			}
			i += end + 2
		case c == '$' && d.dollarQuotes:
			if tag, ok := dollarTag(q[i:]); ok {
				end := strings.Index(q[i+len(tag):], tag)
				if end < 0 {
					return fmt.Errorf("the dollar quote %s is not closed", tag)
				}
				i += len(tag) + end + len(tag)
				continue
			}
			i++
		case isWordByte(c):
			j := i
			for j < len(q) && (isWordByte(q[j]) || d.dollarQuotes && q[j] == '$') {
				j++ // in Postgres, $ continues a name (a$b), so it opens no dollar quote there
			}
			w := strings.ToLower(q[i:j])
			if w[0] < '0' || w[0] > '9' {
				words = append(words, w)
				if writeWords[w] {
					return fmt.Errorf("it uses %s, which is not a read", strings.ToUpper(w))
				}
			}
			i = j
		default:
			i++
		}
	}
	if inExec {
		return errors.New("a /*! comment is not closed")
	}
	if len(words) == 0 {
		return errors.New("it is empty")
	}
	switch words[0] {
	case "select":
	case "with":
		if !contains(words, "select") {
			return errors.New("WITH is not followed by a SELECT")
		}
	default:
		return fmt.Errorf("it starts with %s, not SELECT or WITH", strings.ToUpper(words[0]))
	}
	return nil
}

// execComment returns the length of the opening of an executable comment at the start of s,
// or 0: MySQL runs what /*! … */ and /*!50100 … */ hold, MariaDB also /*M! … */ and
// /*M!100100 … */ (an older server skips a version above its own; the check reads the text as
// code whatever the version). MariaDB reads /*m! as a comment; it counts as code here too.
func (d sqlDialect) execComment(s string) int {
	if !d.execComments || !strings.HasPrefix(s, "/*") {
		return 0
	}
	n := 2
	if n+1 < len(s) && (s[n] == 'M' || s[n] == 'm') && s[n+1] == '!' {
		n++
	}
	if n >= len(s) || s[n] != '!' {
		return 0
	}
	n++
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++ // the version: read as a number, it would be a value, not a word
	}
	return n
}

// blockComment returns the end of the /* comment at q[i:].
func (d sqlDialect) blockComment(q string, i int) (int, error) {
	depth := 0
	for j := i; j+1 < len(q); {
		switch {
		case q[j] == '/' && q[j+1] == '*':
			if depth > 0 && !d.nestedComments {
				j += 2
				continue
			}
			depth++
			j += 2
		case q[j] == '*' && q[j+1] == '/':
			depth--
			j += 2
			if depth == 0 {
				return j, nil
			}
		default:
			j++
		}
	}
	return 0, errors.New("a /* comment is not closed")
}

// quoted returns the end of the literal or identifier opened by q[i] == quote; a doubled quote
// is the quote itself, and with backslash a \ escapes the next byte.
func quoted(q string, i int, quote byte, backslash bool) (int, error) {
	for j := i + 1; j < len(q); j++ {
		switch q[j] {
		case '\\':
			if backslash {
				j++
			}
		case quote:
			if j+1 < len(q) && q[j+1] == quote {
				j++
				continue
			}
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("a %c is not closed", quote)
}

// dollarTag returns the opening $tag$ of a Postgres dollar-quoted string at the start of s.
func dollarTag(s string) (string, bool) {
	for j := 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '$':
			return s[:j+1], true
		case c >= '0' && c <= '9':
			if j == 1 {
				return "", false // $1: a parameter
			}
		case !isWordByte(c):
			return "", false
		}
	}
	return "", false
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// wordBefore reports whether q[i] continues a word (so an E there is not a string prefix).
func wordBefore(q string, i int) bool { return i > 0 && (isWordByte(q[i-1]) || q[i-1] == '$') }

func contains(words []string, w string) bool {
	for _, x := range words {
		if x == w {
			return true
		}
	}
	return false
}

// invalidDSNError is a DSN the driver cannot read.
type invalidDSNError struct{ err error }

func (e *invalidDSNError) Error() string { return e.err.Error() }
func (e *invalidDSNError) Unwrap() error { return e.err }

// neverSucceeds reports whether the database answered the query in a way no retry changes: a
// syntax error, a missing table or column, a refused write, a missing privilege, a refused
// user or password; or the DSN could not be read.
func neverSucceeds(err error) bool {
	if errors.Is(err, ErrQueryNeverSucceeds) {
		return true
	}
	var dsnErr *invalidDSNError
	var pgParse *pgconn.ParseConfigError
	if errors.As(err, &dsnErr) || errors.As(err, &pgParse) {
		return true // a DSN the driver cannot read
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 42: syntax error or access rule violation; 25006: read-only transaction;
		// class 0A: feature not supported; class 28: the user or password refused.
		return strings.HasPrefix(pgErr.Code, "42") || pgErr.Code == "25006" || strings.HasPrefix(pgErr.Code, "0A") ||
			strings.HasPrefix(pgErr.Code, "28")
	}
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		switch myErr.Number {
		case 1045, // access denied for the user: a wrong password or user name
			1044, // access denied to the database
			1054, // unknown column
			1064, // syntax error
			1142, // command denied
			1143, // column command denied
			1146, // no such table
			1149, // syntax error
			1792: // read-only transaction
			return true
		}
		return false
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		switch liteErr.Code() & 0xff {
		case 1, // SQLITE_ERROR: syntax error, no such table or column
			8,  // SQLITE_READONLY
			23: // SQLITE_AUTH
			return true
		}
	}
	return false
}
