package spillset

import "math/bits"

// blockBytes is the size of a block of the filter (half a cache line).
const blockBytes = 32

// filter is a split block Bloom filter (as Apache Parquet's): a hash sets one bit in each
// of the 8 words of one block, the block chosen by its top bits, the bits by its low 32.
// Its false-positive rate at 16 bits a hash is 0.13%, at 12 0.54%, at 8 3.3%, at 4 33%, at
// 2 86% (a million random hashes).
type filter struct {
	words  []uint32
	blocks uint64
}

var salts = [8]uint32{0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31}

func newFilter(bytes int64) *filter {
	n := max(1, bytes/blockBytes)
	return &filter{words: make([]uint32, n*8), blocks: uint64(n)}
}

func (f *filter) block(k uint64) *[8]uint32 {
	b, _ := bits.Mul64(k, f.blocks)
	return (*[8]uint32)(f.words[b*8 : b*8+8])
}

func (f *filter) add(k uint64) {
	blk, x := f.block(k), uint32(k)
	for i, salt := range salts {
		blk[i] |= 1 << ((x * salt) >> 27)
	}
}

func (f *filter) has(k uint64) bool {
	blk, x := f.block(k), uint32(k)
	for i, salt := range salts {
		if blk[i]&(1<<((x*salt)>>27)) == 0 {
			return false
		}
	}
	return true
}
