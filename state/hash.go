package state

import "strings"

// Hasher is subsync's 64-bit hash of a sequence of strings, used for e-mail and payload
// fingerprints. It reads eight bytes at a time and mixes each word in with the SplitMix64
// finaliser (a bijection with full avalanche, so a difference in one word cannot cancel
// against the next), at a few nanoseconds per eight bytes. Its output is stored: it must never
// change. It is not a cryptographic hash (inputs are the user's own data).
type Hasher struct{ h uint64 }

const (
	hashK0 = 0x9E3779B97F4A7C15
	hashK1 = 0xBF58476D1CE4E5B9
	hashK2 = 0x94D049BB133111EB
)

// NewHasher returns a Hasher with the fixed seed.
func NewHasher() Hasher { return Hasher{h: hashK2} }

func mix64(h uint64) uint64 {
	h ^= h >> 30
	h *= hashK1
	h ^= h >> 27
	h *= hashK2
	h ^= h >> 31
	return h
}

// String adds s (and its length, so that ("ab","c") and ("a","bc") differ).
func (x *Hasher) String(s string) {
	h := x.h ^ uint64(len(s))*hashK0
	for len(s) >= 8 {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		h = mix64(h ^ w)
		s = s[8:]
	}
	var w uint64
	for i := 0; i < len(s); i++ {
		w |= uint64(s[i]) << (8 * i)
	}
	x.h = mix64(h ^ w)
}

// Uint64 adds v (a count, so that variable-length parts cannot be confused).
func (x *Hasher) Uint64(v uint64) { x.h = mix64(x.h ^ v*hashK0 ^ hashK1) }

// Sum64 returns the hash of the strings added so far.
func (x *Hasher) Sum64() uint64 { return mix64(x.h ^ hashK1) }

// NormaliseEmail is the form e-mails are compared in: trimmed and lower-cased, as the
// service matches them.
func NormaliseEmail(email string) string {
	email = strings.TrimSpace(email)
	for i := 0; i < len(email); i++ {
		if c := email[i]; c >= 'A' && c <= 'Z' || c >= 0x80 {
			return strings.ToLower(email)
		}
	}
	return email
}

// EmailHash is the hash of the normalised e-mail. Two e-mails that collide cost at most an
// unnecessary send: the payload hash covers the e-mail itself.
func EmailHash(email string) uint64 { return NormalisedEmailHash(NormaliseEmail(email)) }

// NormalisedEmailHash is EmailHash of an e-mail already normalised (NormaliseEmail), for a
// caller that keeps the normalised form too.
func NormalisedEmailHash(normalised string) uint64 {
	h := NewHasher()
	h.String(normalised)
	return h.Sum64()
}
