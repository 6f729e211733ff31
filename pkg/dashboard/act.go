package dashboard

import (
	"errors"
	"net/http"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// confirmData is an action's confirmation: what it will write, and the form that makes
// it.
type confirmData struct {
	workloadData
	Action Action
	Fields url.Values
}

// confirm shows what an action will write before it is made.
func (s *Server) confirm(w http.ResponseWriter, r *http.Request) {
	if !s.canAct() {
		http.Error(w, "403 Forbidden: this dashboard is read-only", http.StatusForbidden)
		return
	}
	kind, ns, name := r.PathValue("kind"), r.PathValue("ns"), r.PathValue("name")
	a, err := ActionOf(r.URL.Query(), kind, ns, name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	d := confirmData{workloadData: s.workload(kind, ns, name), Action: a, Fields: a.Values()}
	d.CSRF = csrfToken(s.csrf, identityOf(r).csrfKey)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	s.render(w, "confirm", d)
}

// resultData is an action refused: the API server's (or the CLI's) line.
type resultData struct {
	workloadData
	Action Action
	Error  string
}

// action makes a confirmed action, as the requesting user, and sends the browser back
// to the workload page, which shows the line and the events that follow. A refusal is
// answered with the API server's status and message.
func (s *Server) action(w http.ResponseWriter, r *http.Request) {
	if !s.canAct() {
		http.Error(w, "403 Forbidden: this dashboard is read-only", http.StatusForbidden)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id := identityOf(r)
	// A request with a bearer token carries no cookie a browser would add by itself;
	// any other needs the form's CSRF token.
	if bearer(r) == "" || id.csrfKey != "" {
		if !equalTokens(r.PostFormValue("csrf"), csrfToken(s.csrf, id.csrfKey)) {
			http.Error(w, "403 Forbidden: the form's CSRF token is missing or not this session's; reload the page and try again", http.StatusForbidden)
			return
		}
	}
	kind, ns, name := r.PathValue("kind"), r.PathValue("ns"), r.PathValue("name")
	a, err := ActionOf(r.PostForm, kind, ns, name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	client, err := s.clientFor(r)
	if err == nil {
		var line string
		if line, err = s.opts.Actions.Do(r.Context(), client, a); err == nil {
			http.Redirect(w, r, "/w/"+ns+"/"+kind+"/"+name+"?result="+url.QueryEscape(line), http.StatusSeeOther)
			return
		}
	}
	code := http.StatusUnprocessableEntity
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code >= 400 {
		code = int(status.Status().Code)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	s.render(w, "refused", resultData{workloadData: s.workload(kind, ns, name), Action: a, Error: err.Error()})
}
