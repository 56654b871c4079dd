package mapping

import "strings"

// splitName splits a cleaned full name into a first and a last name by how (a Split
// constant). A name with a comma is last name first ("Hansen, Kari Anne"); a single word is a
// first name.
func splitName(v, how string) (first, last string) {
	if i := strings.IndexByte(v, ','); i >= 0 {
		return strings.TrimSpace(v[i+1:]), strings.TrimSpace(v[:i])
	}
	switch how {
	case SplitFirstWord:
		if i := strings.IndexByte(v, ' '); i >= 0 {
			return v[:i], v[i+1:]
		}
	case SplitLastFirst:
		if i := strings.IndexByte(v, ' '); i >= 0 {
			return v[i+1:], v[:i]
		}
	default:
		if i := strings.LastIndexByte(v, ' '); i >= 0 {
			return v[:i], v[i+1:]
		}
	}
	return v, ""
}
