package sinktest

import (
	"net/http"
	"strings"
)

// listJSON is the v2 List representation.
type listJSON struct {
	ID               int64  `json:"id"`
	Title            string `json:"title"`
	DateCreated      string `json:"date_created"`
	DateUpdated      string `json:"date_updated"`
	SubscriberEmails int    `json:"subscriber_emails"`
	SubscriberSMS    int    `json:"subscriber_sms"`
}

func (l *list) json() listJSON {
	return listJSON{
		ID: l.id, Title: l.title, DateCreated: formatMS(l.created), DateUpdated: formatMS(l.updated),
		SubscriberEmails: l.emails, SubscriberSMS: l.sms,
	}
}

type titleBody struct {
	Title *string `json:"title"`
}

func (e *Emulator) getLists(w http.ResponseWriter, _ *http.Request, _ *reqInfo) {
	e.mu.Lock()
	ls := e.st.sortedLists()
	out := make([]listJSON, len(ls))
	for i, l := range ls {
		out[i] = l.json()
	}
	e.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// readTitle reads a {"title": "..."} body; on failure it has answered.
func readTitle(w http.ResponseWriter, r *http.Request) (string, bool) {
	body, err := readBody(w, r)
	if err != nil {
		return "", false
	}
	var b titleBody
	if err := decodeObject(w, body, &b); err != nil {
		return "", false
	}
	if b.Title == nil || strings.TrimSpace(*b.Title) == "" {
		write422(w, "title is required")
		return "", false
	}
	return *b.Title, true
}

func (e *Emulator) createList(w http.ResponseWriter, r *http.Request, _ *reqInfo) {
	title, ok := readTitle(w, r)
	if !ok {
		return
	}
	e.mu.Lock()
	l := e.st.createList(title, ms(e.now())).json()
	e.mu.Unlock()
	writeJSON(w, http.StatusOK, l)
}

func (e *Emulator) getList(w http.ResponseWriter, _ *http.Request, _ *reqInfo, id int64) {
	e.mu.Lock()
	l, ok := e.st.lists[id]
	var out listJSON
	if ok {
		out = l.json()
	}
	e.mu.Unlock()
	if !ok {
		notFound(w, nil, nil)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (e *Emulator) updateList(w http.ResponseWriter, r *http.Request, _ *reqInfo, id int64) {
	e.mu.Lock()
	_, ok := e.st.lists[id]
	e.mu.Unlock()
	if !ok {
		notFound(w, nil, nil)
		return
	}
	title, ok := readTitle(w, r)
	if !ok {
		return
	}
	e.mu.Lock()
	l, ok := e.st.lists[id]
	var out listJSON
	if ok {
		l.title, l.updated = title, ms(e.now())
		out = l.json()
	}
	e.mu.Unlock()
	if !ok {
		notFound(w, nil, nil)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// deleteList serves the v2 and the v3 delete alike: the list and its memberships go.
func (e *Emulator) deleteList(w http.ResponseWriter, _ *http.Request, _ *reqInfo, id int64) {
	e.mu.Lock()
	ok := e.st.deleteList(id)
	e.mu.Unlock()
	if !ok {
		notFound(w, nil, nil)
		return
	}
	writeOK(w)
}
