package jobs

import (
	"context"
	"log/slog"

	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// background is a value made on a goroutine of its own while its caller goes on: a delta
// sync's fingerprints loading (24 bytes a row, tens of milliseconds for a million) while the
// run asks the service about the list, and its file source opening (a CSV file is read whole
// once, for its encoding) meanwhile.
type background[T any] struct {
	done   chan struct{}
	v      T
	err    error
	cancel context.CancelFunc
}

func inBackground[T any](ctx context.Context, fn func(context.Context) (T, error)) *background[T] {
	bctx, cancel := context.WithCancel(ctx)
	b := &background[T]{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(b.done)
		b.v, b.err = fn(bctx)
	}()
	return b
}

// wait returns the value once made.
func (b *background[T]) wait(ctx context.Context) (T, error) {
	select {
	case <-b.done:
		return b.v, b.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// stop ends the work if it still runs and returns what it made, for the caller to release.
func (b *background[T]) stop() (T, error) {
	b.cancel()
	<-b.done
	return b.v, b.err
}

// fingerprintLoad returns the load of a delta run's fingerprints for prepare: the caller's
// (s.fps, released by the caller), or one begun now (nil when the run needs none); and what
// prepare defers: a load of its own is released unless prepare succeeded (the run then
// closes the set, pipeline.Config.Fingerprints).
func (rt *Runtime) fingerprintLoad(ctx context.Context, s streamSpec) (*background[*state.FingerprintSet], func(ok bool)) {
	if s.fps != nil || !s.delta || s.verify {
		return s.fps, func(bool) {}
	}
	load := rt.loadFingerprints(ctx, s.listID)
	return load, func(ok bool) {
		if ok {
			load.stop() // done by then
		} else {
			releaseFingerprints(load)
		}
	}
}

// waitFingerprints waits for a load of fingerprints, and logs that they are on a temporary
// file when they are beyond the memory budget.
func (rt *Runtime) waitFingerprints(ctx context.Context, log *slog.Logger, listID int64,
	load *background[*state.FingerprintSet]) (*state.FingerprintSet, error) {
	fps, err := load.wait(ctx)
	if err == nil && fps.Spilled() {
		log.InfoContext(ctx, "the list's fingerprints are beyond the memory budget: looked up in a temporary file",
			slog.Int64("list_id", listID), slog.Int("fingerprints", fps.Len()), slog.Int64("memory_budget", rt.cfg.MemoryBudget))
	}
	return fps, err
}

// loadFingerprints loads a delta run's fingerprints in the background, within the memory
// budget (beyond it they are on a temporary file). Whoever started it releases them
// (releaseFingerprints) when the run ends; the run's pipeline closes them too.
func (rt *Runtime) loadFingerprints(ctx context.Context, listID int64) *background[*state.FingerprintSet] {
	lim := state.FingerprintLimits{MemoryBudget: rt.cfg.MemoryBudget, TempDir: rt.tempDir()}
	return inBackground(ctx, func(ctx context.Context) (*state.FingerprintSet, error) {
		return rt.store.LoadFingerprintsWithin(ctx, listID, lim)
	})
}

// releaseFingerprints stops a load of fingerprints and closes what it loaded (its temporary
// file, if any).
func releaseFingerprints(b *background[*state.FingerprintSet]) {
	if set, err := b.stop(); err == nil {
		_ = set.Close()
	}
}

// openSource opens src in the background. Whoever waited for it closes it; the caller of
// openSource closes it too, when done (closing a source twice is safe), to release it when
// the run ends before taking it.
func openSource(ctx context.Context, src sources.Config) *background[sources.Reader] {
	return inBackground(ctx, func(ctx context.Context) (sources.Reader, error) { return sources.Open(ctx, src) })
}

// closeSource stops an opening source and closes it.
func closeSource(o *background[sources.Reader]) {
	if r, err := o.stop(); err == nil {
		_ = r.Close()
	}
}
