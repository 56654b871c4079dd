package jobs

import (
	"bytes"
	"os"
	"strings"
)

// FileOrigin says where a staged file was read when it was queued, and what it was then: a
// worker on that machine that finds the file there unchanged reads it as it is, instead of
// restoring the staged copy (the same bytes) to a file of its own first.
type FileOrigin struct {
	// Host is the queueing machine's name and machine id (hostID).
	Host string `json:"host"`
	// Size and ModTime (Unix nanoseconds) are the file's when it was staged.
	Size    int64 `json:"size"`
	ModTime int64 `json:"mod_time"`
}

// hostID names this machine: its host name and, where the system has one, its machine id
// (two containers may share a host name, not a machine id and a file with the same path,
// size and modification time to the nanosecond).
func hostID() string {
	name, _ := os.Hostname()
	id, _ := os.ReadFile("/etc/machine-id")
	return name + "/" + strings.TrimSpace(string(bytes.TrimSpace(id)))
}

// originOf is the origin of a file as found by stat before and after it was staged: nil when
// it changed meanwhile (the staged copy may then be of neither).
func originOf(before, after os.FileInfo) *FileOrigin {
	if before == nil || after == nil || before.Size() != after.Size() || !before.ModTime().Equal(after.ModTime()) {
		return nil
	}
	return &FileOrigin{Host: hostID(), Size: after.Size(), ModTime: after.ModTime().UnixNano()}
}

// unchangedHere reports whether path is, on this machine, the file the origin describes.
func (o *FileOrigin) unchangedHere(path string) bool {
	if o == nil || o.Host != hostID() {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Size() == o.Size && fi.ModTime().UnixNano() == o.ModTime
}
