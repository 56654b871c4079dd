package sources

import (
	"database/sql/driver"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgtype"
)

// Layouts of date and time values turned into text. A value with a time zone is written
// in UTC with a Z; one without keeps its wall-clock time and gets no zone.
const (
	layoutDate      = "2006-01-02"
	layoutTime      = "15:04:05.999999999"
	layoutTimestamp = "2006-01-02T15:04:05.999999999"
)

// pgText turns a value pgx decoded from a column of the given type into text.
func pgText(oid uint32, v any) (string, error) {
	if t, ok := v.(time.Time); ok {
		switch oid {
		case pgtype.DateOID:
			return t.Format(layoutDate), nil
		case pgtype.TimestampOID:
			return t.Format(layoutTimestamp), nil
		case pgtype.TimestamptzOID:
			return t.UTC().Format(time.RFC3339Nano), nil
		}
	}
	return valueText(v)
}

// sqlText turns a value a database/sql driver returned for a column of the given database
// type (upper case, as ColumnType.DatabaseTypeName reports it) into text.
func sqlText(typ string, v any) (string, error) {
	switch x := v.(type) {
	case time.Time:
		switch typ {
		case "DATE":
			return x.Format(layoutDate), nil
		case "TIME":
			return x.Format(layoutTime), nil
		}
		if x.Location() == time.UTC {
			return x.Format(layoutTimestamp), nil
		}
		return x.Format(time.RFC3339Nano), nil
	case []byte:
		return textTimestamp(typ, bytesText(x)), nil
	case string:
		return textTimestamp(typ, x), nil
	}
	return valueText(v)
}

// textTimestamp rewrites a timestamp a driver returned as text ("2024-01-31 12:00:00.500000",
// MySQL with parseTime off) in the layout of every other source: "2024-01-31T12:00:00.5".
func textTimestamp(typ, s string) string {
	if typ != "DATETIME" && typ != "TIMESTAMP" {
		return s
	}
	if len(s) < 19 || s[10] != ' ' {
		return s
	}
	s = s[:10] + "T" + s[11:]
	if dot := strings.IndexByte(s, '.'); dot > 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	return s
}

// valueText turns a driver's value into text: numbers in full (never with an exponent),
// booleans as true/false, NULL as "".
func valueText(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case []byte:
		return bytesText(x), nil
	case bool:
		return strconv.FormatBool(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case int16:
		return strconv.FormatInt(int64(x), 10), nil
	case int8:
		return strconv.FormatInt(int64(x), 10), nil
	case int:
		return strconv.Itoa(x), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case uint32:
		return strconv.FormatUint(uint64(x), 10), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32), nil
	case time.Time:
		return x.Format(time.RFC3339Nano), nil
	case [16]byte: // a uuid
		h := hex.EncodeToString(x[:])
		return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
	case pgtype.Time:
		if !x.Valid {
			return "", nil
		}
		return time.UnixMicro(x.Microseconds).UTC().Format(layoutTime), nil
	case map[string]any, []any:
		b, err := json.Marshal(x)
		return string(b), err
	case driver.Valuer:
		dv, err := x.Value()
		if err != nil {
			return "", err
		}
		if _, again := dv.(driver.Valuer); again {
			return "", fmt.Errorf("cannot turn a %T into text", v)
		}
		return valueText(dv)
	case fmt.Stringer:
		return x.String(), nil
	}
	return "", fmt.Errorf("cannot turn a %T into text", v)
}

// bytesText returns text as it is and binary data in Postgres's hex form (\x0102...).
func bytesText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return `\x` + hex.EncodeToString(b)
}
