package sources

import (
	"archive/zip"
	"context"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sync/semaphore"
)

// The memory an XLSX reader holds is bounded whatever the workbook: the read buffer grows to
// one cell at most (MaxCellSize), a row to rowSize(MaxCellSize), the shared-string table is
// kept in memory whole, at most its unpacked size (MaxSheetSize), and excelize holds the few
// small parts it parses (xlsxparts.go). The readers of one process share a
// budget for all of it (DefaultXLSXMemory, SetXLSXMemory): a reader claims what it may
// hold before it reads the table, waits while other readers hold the budget, and gives it
// back on Close. A workbook that alone needs more than the budget fails with ErrTooLarge.
// Several imports of large workbooks at once then take their turns instead of the machine.

// DefaultXLSXMemory is the budget the XLSX readers of a process share.
const DefaultXLSXMemory = 1 << 30

var xlsxMemory = struct {
	sync.Mutex
	sem  *semaphore.Weighted
	size int64
}{sem: semaphore.NewWeighted(DefaultXLSXMemory), size: DefaultXLSXMemory}

// SetXLSXMemory sets the budget the XLSX readers of this process share (bytes, > 0).
// Readers already open keep what they claimed from the old one.
func SetXLSXMemory(n int64) {
	xlsxMemory.Lock()
	defer xlsxMemory.Unlock()
	xlsxMemory.sem, xlsxMemory.size = semaphore.NewWeighted(n), n
}

// memoryClaim is what one reader holds of the budget.
type memoryClaim struct {
	sem  *semaphore.Weighted
	n    int64
	once sync.Once
}

func (c *memoryClaim) release() { c.once.Do(func() { c.sem.Release(c.n) }) }

// claimMemory claims what a reader may hold: a shared-string table of sstSize bytes of XML
// (its text and an index of 4 bytes a string), its buffers for cells of maxCell bytes and a
// row of rowSize(maxCell) (and its copy), and what excelize holds of the parts it parsed
// (partsCost, see checkParts).
func claimMemory(ctx context.Context, sstSize int64, maxCell int, partsCost int64) (*memoryClaim, error) {
	n := sstSize + sstSize/2 + 3*int64(maxCell) + 2*int64(rowSize(maxCell)) + 3*scanBuf + partsCost
	xlsxMemory.Lock()
	sem, size := xlsxMemory.sem, xlsxMemory.size
	xlsxMemory.Unlock()
	if n > size {
		return nil, fmt.Errorf("%w: reading it takes up to %d bytes of memory (its shared strings unpack to %d, its styles and workbook parts take %d), more than the %d all workbooks read at once may take", ErrTooLarge, n, sstSize, partsCost, size)
	}
	if err := sem.Acquire(ctx, n); err != nil {
		return nil, fmt.Errorf("wait for memory (other workbooks are being read): %w", err)
	}
	return &memoryClaim{sem: sem, n: n}, nil
}

// partSize returns the declared unpacked size of the part name, 0 when there is none.
func partSize(zr *zip.Reader, name string) int64 {
	if name == "" {
		return 0
	}
	for _, f := range zr.File {
		if strings.EqualFold(f.Name, name) {
			return int64(min(f.UncompressedSize64, 1<<62))
		}
	}
	return 0
}
