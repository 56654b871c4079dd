package state

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestAddBatchAsAdd: AddBatch leaves the pending fingerprints exactly as Add one after the
// other does: the same entries in the same buckets and order (a later one for an e-mail
// winning when saved), blocks filled and begun alike, also for a batch that repeats e-mails
// and for an empty one.
func TestAddBatchAsAdd(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	one, batch := NewFingerprintSet(1), NewFingerprintSet(1)
	var emails []uint64
	for round := range 50 {
		fps := make([]Fingerprint, rng.IntN(3000))
		for i := range fps {
			e := rng.Uint64()
			if len(emails) > 0 && i%5 == 4 {
				e = emails[rng.IntN(len(emails))]
			}
			emails = append(emails, e)
			fps[i] = Fingerprint{Email: e, Payload: uint64(round), Source: uint64(i)}
		}
		for _, fp := range fps {
			one.Add(fp)
		}
		batch.AddBatch(fps)
		if one.npending != batch.npending || !reflect.DeepEqual(one.pending, batch.pending) {
			t.Fatalf("round %d: AddBatch left %d pending, Add %d, or a different order", round, batch.npending, one.npending)
		}
	}
}
