package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/subsync/subsync/internal/pipeline"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

// listSuppressions is what one read of a list's unsubscribed and bounced people found.
type listSuppressions struct {
	found []state.StatusChange
	// disagreed counts the rows the service answered for one status filter whose own status
	// was another: a service that ignores the filter. They are left out.
	disagreed int
	// requests is how many pages the read asked for.
	requests int
}

// warning is the read's note for a run's message, "" when there is none.
func (r listSuppressions) warning(listID int64) string {
	if r.disagreed == 0 {
		return ""
	}
	return fmt.Sprintf("list %d: %d rows of /subscribers/by_list had another status than the status filter asked for "+
		"and were ignored (the service may ignore the filter); each person's own status is what counts", listID, r.disagreed)
}

// readListSuppressions reads the people the service holds as unsubscribed or bounced in a
// list (GET /subscribers/by_list, status=unsubscribed, then status=bounce, every page),
// updated after `after` (everything when zero). Each row's own status is what is recorded:
// a row whose status disagrees with the filter is left out and counted (a service that
// ignores the filter must not turn active people into unsubscribes written back to the
// source). A row without a status is believed to have the status asked for, unless the
// service shows the same person for both filters: then it ignores the filter and says
// nothing of the statuses, and the read fails rather than guess.
func (rt *Runtime) readListSuppressions(ctx context.Context, listID int64, after, now time.Time) (listSuppressions, error) {
	var out listSuppressions
	statusless := map[string]string{} // e-mail of a row without a status → the filter that answered it
	for _, status := range []string{sink.StatusUnsubscribed, sink.StatusBounce} {
		seen := map[string]bool{}
		for page := 1; ; page++ {
			recs, err := rt.sink.SubscribersByList(ctx, sink.ByListQuery{ListID: listID, Page: page,
				PerPage: sink.MaxPerPage, Status: status, UpdatedAfter: after})
			out.requests++
			if err != nil {
				return out, fmt.Errorf("read the %s people of list %d (GET /subscribers/by_list): %w", status, listID, err)
			}
			fresh := 0
			for _, r := range recs {
				email := state.NormaliseEmail(r.Email)
				if email == "" || seen[email] {
					continue
				}
				seen[email] = true
				fresh++
				own := r.Status
				if own == "" {
					if other, ok := statusless[email]; ok && other != status {
						return out, permanent(fmt.Errorf("list %d: /subscribers/by_list answered the same subscriber (id %d) "+
							"for status=%s and for status=%s, without a status of its own: the service ignores the "+
							"status filter, and subsync cannot tell who unsubscribed or bounced", listID, r.ID, other, status))
					}
					statusless[email] = status
					own = status
				}
				if own != status {
					out.disagreed++
					continue
				}
				at, err := time.Parse(time.RFC3339Nano, r.DateUpdated)
				if err != nil {
					at = now
				}
				out.found = append(out.found, state.StatusChange{Email: r.Email, Status: own, ListID: listID,
					SubscriberID: r.ID, ChangedAt: at.UTC()})
			}
			if len(recs) < sink.MaxPerPage {
				break
			}
			if fresh == 0 {
				return out, permanent(fmt.Errorf("list %d: page %d of /subscribers/by_list (status=%s) answered only "+
					"subscribers of the pages before it: the service does not page by \"page\", and subsync cannot read "+
					"the list to its end", listID, page, status))
			}
		}
	}
	return out, nil
}

// learnList makes sure the service's own suppressions of a list are in the suppression list
// before anything is pushed into it: a list never read so (state.Store.ListLearned) is read
// now (readListSuppressions, everything), what it holds recorded (and queued for write-back,
// as a reconciliation's finds are), and the list marked learnt; the reconciliation refreshes
// it from then on. If the list cannot be read, the run fails and says why instead of pushing
// blind: a service that revives people on a push would otherwise make them active again.
//
// A dry run records nothing: it returns what it read, by e-mail hash, to check its rows
// against as well (nil when the list was learnt before).
func (rt *Runtime) learnList(ctx context.Context, log *slog.Logger, listID int64, dryRun bool) (map[uint64]string, error) {
	if !dryRun {
		rt.useListForm(ctx, log)
	}
	if _, ok, err := rt.store.ListLearned(ctx, listID); err != nil || ok {
		return nil, err
	}
	now := time.Now().UTC()
	read, err := rt.readListSuppressions(ctx, listID, time.Time{}, now)
	if err != nil {
		err = fmt.Errorf("learn who unsubscribed or bounced in list %d before the first push into it "+
			"(subsync does not push into a list it has not read): %w", listID, err)
		if isPermanent(err) {
			return nil, permanent(err)
		}
		return nil, err
	}
	if w := read.warning(listID); w != "" {
		log.WarnContext(ctx, "by_list status filter", slog.String("warning", w))
	}
	if dryRun {
		extra := make(map[uint64]string, len(read.found))
		for _, c := range read.found {
			extra[state.EmailHash(c.Email)] = c.Status
		}
		return extra, nil
	}
	n, err := rt.store.RecordReconciled(ctx, read.found, rt.writeBackTargets())
	if err != nil {
		return nil, err
	}
	if err := rt.store.MarkListLearned(ctx, listID, now, len(read.found)); err != nil {
		return nil, err
	}
	log.InfoContext(ctx, "read the service's unsubscribed and bounced people of the list before the first push into it",
		slog.Int64("list_id", listID), slog.Int("found", len(read.found)), slog.Int("new", n))
	return nil, nil
}

// writeBackTargets are the targets a recorded change is queued for.
func (rt *Runtime) writeBackTargets() []string {
	if k := rt.cfg.StatusPull.WriteBack.Kind; k != "" {
		return []string{k}
	}
	return nil
}

// withLearnt makes a dry run check its rows against what learnList read of a list never
// learnt (extra, by e-mail hash) as well as against the suppression list.
func withLearnt(cfg *pipeline.Config, extra map[uint64]string) {
	if extra == nil {
		return
	}
	cfg.Store = learntStore{Store: cfg.Store, extra: extra}
	if cfg.Suppressions != nil {
		cfg.Suppressions = learntSet{Suppressions: cfg.Suppressions, extra: extra}
	}
}

type learntStore struct {
	pipeline.Store
	extra map[uint64]string
}

func (s learntStore) LoadSuppressions(ctx context.Context, listID int64) (pipeline.Suppressions, error) {
	sup, err := s.Store.LoadSuppressions(ctx, listID)
	if err != nil {
		return nil, err
	}
	return learntSet{Suppressions: sup, extra: s.extra}, nil
}

type learntSet struct {
	pipeline.Suppressions
	extra map[uint64]string
}

func (s learntSet) Len() int { return s.Suppressions.Len() + len(s.extra) }

func (s learntSet) Status(h uint64) (string, bool) {
	if st, ok := s.Suppressions.Status(h); ok {
		return st, true
	}
	st, ok := s.extra[h]
	return st, ok
}

// joinWarnings joins a run's notes, leaving out empty ones.
func joinWarnings(ws ...string) string {
	var out []string
	for _, w := range ws {
		if w != "" {
			out = append(out, w)
		}
	}
	return strings.Join(out, "; ")
}
