package cli

import (
	"fmt"
	"io"
	"log/slog"
)

// Log formats of --log-format.
const (
	logAuto = "auto"
	logText = "text"
	logJSON = "json"
)

// newLogger returns the process logger: text on a terminal, JSON otherwise (format "auto"),
// on w. Jobs add the run id and job id to every line of a run with Logger.With.
func newLogger(w io.Writer, format, level string, terminal bool) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl, ReplaceAttr: durationString}
	switch format {
	case logAuto:
		if terminal {
			return slog.New(slog.NewTextHandler(w, opts)), nil
		}
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case logText:
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case logJSON:
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want auto, text or json", format)
}

// durationString writes durations as people read them ("1.5s", "2m0s"), not as nanoseconds,
// in both formats.
func durationString(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}
