package jobs

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

// listFormSetting is the name, in the account settings, under which the form of the list
// parameter the service takes is remembered for an account (its base URL and user id).
func listFormSetting(sc sink.Config) string {
	return "list_param " + strings.TrimRight(sc.BaseURL, "/") + " " + sc.UserID
}

// ListIDForm is the form of the list parameter subsync sends to the service.
type ListIDForm struct {
	Param string // sink.ListParamScalar or sink.ListParamArray
	// How: "configured" (api.list_id_array), "learnt" (accepted by the service, remembered
	// for the account) or "" when not yet known (detected at the first push).
	How string
	At  time.Time // when it was learnt
}

// RememberedListIDForm returns the form of the list parameter configured, or learnt for the
// account and remembered in the database (st may be nil when the form is configured).
func RememberedListIDForm(ctx context.Context, st *state.Store, sc sink.Config) (ListIDForm, error) {
	if !sc.ListIDDetect {
		return ListIDForm{Param: sink.ListParam(sc.ListIDArray), How: "configured"}, nil
	}
	v, at, ok, err := st.AccountSetting(ctx, listFormSetting(sc))
	if err != nil || !ok || (v != sink.ListParamScalar && v != sink.ListParamArray) {
		return ListIDForm{Param: sink.ListParam(sc.ListIDArray)}, err
	}
	return ListIDForm{Param: v, How: "learnt", At: at}, nil
}

// ListIDForm is RememberedListIDForm of the runtime's database and configuration.
func (rt *Runtime) ListIDForm(ctx context.Context) (ListIDForm, error) {
	return RememberedListIDForm(ctx, rt.store, rt.cfg.Sink)
}

// rememberListForm is the sink's OnListIDForm: the form the service took is recorded for the
// account, so that every worker and every later run sends it without trying the other.
func (rt *Runtime) rememberListForm(array bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rt.store.SetAccountSetting(ctx, listFormSetting(rt.cfg.Sink), sink.ListParam(array)); err != nil {
		rt.log.Warn("could not remember the form of the list parameter the service takes", slog.Any("error", err))
	}
}

// useListForm, before a run's first push, gives the client the form learnt for the account
// (by this worker or another) and logs the form the run sends.
func (rt *Runtime) useListForm(ctx context.Context, log *slog.Logger) {
	if rt.sink == nil {
		return
	}
	if _, known := rt.sink.ListIDForm(); !known {
		f, err := rt.ListIDForm(ctx)
		if err != nil {
			log.WarnContext(ctx, "could not read the form of the list parameter learnt for the account", slog.Any("error", err))
		} else if f.How == "learnt" {
			rt.sink.SetListIDForm(f.Param == sink.ListParamArray)
		}
	}
	param, known := rt.sink.ListIDForm()
	how := "detected at the first push: the other form is tried once if the service refuses it"
	if known {
		how = "known"
	}
	log.InfoContext(ctx, "list parameter", slog.String("list_param", param), slog.String("form", how))
}
