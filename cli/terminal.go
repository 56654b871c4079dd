package cli

import (
	"bytes"
	"io"
	"sync"
)

// eraseLine returns the cursor to the start of the line and erases it (ANSI).
const eraseLine = "\r\x1b[K"

// terminalLine is the one writer of a terminal's standard error while a progress bar may be
// drawn on its last line: log lines (Write) and the bar (bar) both go through it. A log line
// clears the bar's line, is written, and the bar is drawn again below it, so that no log line
// is ever drawn over the bar, nor the bar over a log line.
type terminalLine struct {
	mu    sync.Mutex
	w     io.Writer
	frame []byte // the bar as last drawn on the current line ("\r…"); empty when no bar
}

// Write writes log output (whole lines).
func (t *terminalLine) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	drawn := len(bytes.TrimLeft(t.frame, "\r")) > 0
	if drawn {
		if _, err := io.WriteString(t.w, eraseLine); err != nil {
			return 0, err
		}
	}
	n, err := t.w.Write(p)
	if err != nil || !drawn {
		return n, err
	}
	_, err = t.w.Write(t.frame)
	return n, err
}

// bar returns the writer a progress bar draws with.
func (t *terminalLine) bar() io.Writer { return barWriter{t} }

type barWriter struct{ t *terminalLine }

// Write draws the bar: what follows the last carriage return (or newline) is the bar as it
// stands on the current line.
func (b barWriter) Write(p []byte) (int, error) {
	t := b.t
	t.mu.Lock()
	defer t.mu.Unlock()
	t.frame = append(t.frame, p...)
	if i := bytes.LastIndexByte(t.frame, '\n'); i >= 0 {
		t.frame = t.frame[i+1:]
	}
	if i := bytes.LastIndexByte(t.frame, '\r'); i > 0 {
		t.frame = t.frame[i:]
	}
	t.frame = bytes.Clone(t.frame)
	return t.w.Write(p)
}
