package state

import (
	"cmp"
	"encoding/binary"
	"slices"
)

// appendSorted appends fps (sorted by e-mail, later duplicates winning) to dst as entries,
// one per e-mail.
func appendSorted(dst []byte, fps []Fingerprint) []byte {
	for k, fp := range fps {
		if k+1 < len(fps) && fps[k+1].Email == fp.Email {
			continue // a later entry for the same e-mail wins
		}
		dst = binary.LittleEndian.AppendUint64(dst, fp.Email)
		dst = binary.LittleEndian.AppendUint64(dst, fp.Payload)
		dst = binary.LittleEndian.AppendUint64(dst, fp.Source)
	}
	return dst
}

// mergeParts appends to dst the union of a bucket's parts, held one after the other in buf
// (ends[i] is where part i ends; each part sorted, one entry per e-mail), a later part's
// entry for an e-mail replacing an earlier one's.
func mergeParts(dst, buf []byte, ends []int) []byte {
	if len(ends) == 1 {
		return append(dst, buf...)
	}
	var heads [maxParts + 1]int // the next entry of each part (a bucket has at most maxParts)
	if len(ends) > len(heads) {
		acc := buf[:ends[0]]
		for i := 1; i < len(ends); i++ {
			acc = mergeEntries(nil, acc, buf[ends[i-1]:ends[i]])
		}
		return append(dst, acc...)
	}
	for i := 1; i < len(ends); i++ {
		heads[i] = ends[i-1]
	}
	for {
		best, bk := -1, uint64(0)
		for p, end := range ends {
			if heads[p] >= end {
				continue
			}
			k := binary.LittleEndian.Uint64(buf[heads[p]:])
			switch {
			case best < 0 || k < bk:
				best, bk = p, k
			case k == bk: // the later part's entry wins
				heads[best] += fpEntrySize
				best = p
			}
		}
		if best < 0 {
			return dst
		}
		dst = append(dst, buf[heads[best]:heads[best]+fpEntrySize]...)
		heads[best] += fpEntrySize
	}
}

// mergeEntries appends to dst the union of older and newer (sorted entries, one per e-mail
// each), newer's entry replacing older's for the same e-mail.
func mergeEntries(dst, older, newer []byte) []byte {
	i, j := 0, 0
	for i < len(older) && j < len(newer) {
		a, b := binary.LittleEndian.Uint64(older[i:]), binary.LittleEndian.Uint64(newer[j:])
		switch {
		case a < b:
			dst = append(dst, older[i:i+fpEntrySize]...)
			i += fpEntrySize
		case a > b:
			dst = append(dst, newer[j:j+fpEntrySize]...)
			j += fpEntrySize
		default:
			dst = append(dst, newer[j:j+fpEntrySize]...)
			i += fpEntrySize
			j += fpEntrySize
		}
	}
	dst = append(dst, older[i:]...)
	return append(dst, newer[j:]...)
}

// radixSort sorts fps by e-mail hash, stably, in four passes over 16-bit digits.
func radixSort(fps []Fingerprint) []Fingerprint {
	if len(fps) < 256 {
		slices.SortStableFunc(fps, func(a, b Fingerprint) int { return cmp.Compare(a.Email, b.Email) })
		return fps
	}
	src, dst := fps, make([]Fingerprint, len(fps))
	var count [1 << 16]int
	for shift := uint(0); shift < 64; shift += 16 {
		clear(count[:])
		for _, f := range src {
			count[(f.Email>>shift)&0xffff]++
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, f := range src {
			d := (f.Email >> shift) & 0xffff
			dst[count[d]] = f
			count[d]++
		}
		src, dst = dst, src
	}
	return src // four passes: back in fps's array
}

// mergeBucket appends to dst the union of stored (sorted entries) and add (sorted by e-mail,
// later duplicates winning), an added entry replacing a stored one for the same e-mail.
func mergeBucket(dst, stored []byte, add []Fingerprint) []byte {
	entry := func(f Fingerprint) {
		dst = binary.LittleEndian.AppendUint64(dst, f.Email)
		dst = binary.LittleEndian.AppendUint64(dst, f.Payload)
		dst = binary.LittleEndian.AppendUint64(dst, f.Source)
	}
	i := 0
	for k := 0; k < len(add); k++ {
		a := add[k]
		if k+1 < len(add) && add[k+1].Email == a.Email {
			continue // a later entry for the same e-mail wins
		}
		for i+fpEntrySize <= len(stored) && binary.LittleEndian.Uint64(stored[i:]) < a.Email {
			dst = append(dst, stored[i:i+fpEntrySize]...)
			i += fpEntrySize
		}
		if i+fpEntrySize <= len(stored) && binary.LittleEndian.Uint64(stored[i:]) == a.Email {
			i += fpEntrySize
		}
		entry(a)
	}
	return append(dst, stored[i:]...)
}
