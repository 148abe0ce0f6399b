package apisim

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/shardinformer/shardinformer/shardselector"
)

// listOptions are the query parameters of a LIST or WATCH.
type listOptions struct {
	watch             bool
	resourceVersion   string
	match             metav1.ResourceVersionMatch
	limit             int64
	continueToken     string
	label             labels.Selector // nil: everything
	field             fields.Selector // nil: everything
	allowBookmarks    bool
	sendInitialEvents *bool
	timeout           time.Duration // 0: not given
	shardSelector     string        // raw; parsed only with Config.ShardedListAndWatch
}

// parseListOptions decodes and validates the query like the API server's
// ListOptions conversion and validation for a request to res.
func parseListOptions(q url.Values, res *apiResource) (*listOptions, error) {
	o := &listOptions{
		resourceVersion: q.Get("resourceVersion"),
		match:           metav1.ResourceVersionMatch(q.Get("resourceVersionMatch")),
		continueToken:   q.Get("continue"),
		shardSelector:   q.Get("shardSelector"),
	}
	var err error
	parseBool := func(name string) (bool, error) {
		v := q.Get(name)
		if v == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, badRequest("invalid value %q for %s: %v", v, name, err)
		}
		return b, nil
	}
	if o.watch, err = parseBool("watch"); err != nil {
		return nil, err
	}
	if o.allowBookmarks, err = parseBool("allowWatchBookmarks"); err != nil {
		return nil, err
	}
	if q.Has("sendInitialEvents") {
		b, err := parseBool("sendInitialEvents")
		if err != nil {
			return nil, err
		}
		o.sendInitialEvents = &b
	}
	if v := q.Get("limit"); v != "" {
		if o.limit, err = strconv.ParseInt(v, 10, 64); err != nil {
			return nil, badRequest("invalid value %q for limit: %v", v, err)
		}
		o.limit = max(o.limit, 0)
	}
	if v := q.Get("timeoutSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, badRequest("invalid value %q for timeoutSeconds: %v", v, err)
		}
		if n > 0 {
			o.timeout = time.Duration(n) * time.Second
		}
	}
	if v := q.Get("labelSelector"); v != "" {
		sel, err := labels.Parse(v)
		if err != nil {
			return nil, badRequest("unable to parse requirement: %v", err)
		}
		if !sel.Empty() {
			o.label = sel
		}
	}
	if v := q.Get("fieldSelector"); v != "" {
		sel, err := fields.ParseSelector(v)
		if err == nil {
			sel, err = sel.Transform(res.convertField)
		}
		if err != nil {
			return nil, badRequest("%v", err)
		}
		if !sel.Empty() {
			o.field = sel
		}
	}
	if errs := o.validate(); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	return o, nil
}

// validate mirrors the API server's ListOptions validation.
func (o *listOptions) validate() field.ErrorList {
	var errs field.ErrorList
	matchPath := field.NewPath("resourceVersionMatch")
	if o.watch {
		if o.sendInitialEvents != nil {
			if o.match != metav1.ResourceVersionMatchNotOlderThan {
				errs = append(errs, field.Forbidden(matchPath,
					"sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
			}
			if *o.sendInitialEvents && !o.allowBookmarks {
				errs = append(errs, field.Forbidden(field.NewPath("allowWatchBookmarks"),
					"sendInitialEvents requires setting allowWatchBookmarks to true"))
			}
		} else if o.match != "" {
			errs = append(errs, field.Forbidden(matchPath,
				"resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
		}
		if o.match != "" && o.match != metav1.ResourceVersionMatchNotOlderThan {
			errs = append(errs, field.NotSupported(matchPath, o.match, []string{string(metav1.ResourceVersionMatchNotOlderThan)}))
		}
		return errs
	}
	if o.match != "" {
		if o.resourceVersion == "" {
			errs = append(errs, field.Forbidden(matchPath, "resourceVersionMatch is forbidden unless resourceVersion is provided"))
		}
		if o.continueToken != "" {
			errs = append(errs, field.Forbidden(matchPath, "resourceVersionMatch is forbidden when continue is provided"))
		}
		switch o.match {
		case metav1.ResourceVersionMatchExact:
			if o.resourceVersion == "0" {
				errs = append(errs, field.Forbidden(matchPath, `resourceVersionMatch "exact" is forbidden for resourceVersion "0"`))
			}
		case metav1.ResourceVersionMatchNotOlderThan:
		default:
			errs = append(errs, field.NotSupported(matchPath, o.match, []string{
				string(metav1.ResourceVersionMatchExact), string(metav1.ResourceVersionMatchNotOlderThan)}))
		}
	}
	if o.sendInitialEvents != nil {
		errs = append(errs, field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for list"))
	}
	return errs
}

// filter selects the objects a request sees.
type filter struct {
	res       *apiResource
	namespace string
	label     labels.Selector         // nil: everything
	field     fields.Selector         // nil: everything
	shard     *shardselector.Selector // nil: everything
}

func (f *filter) matches(o *object) bool {
	if o.res != f.res || (f.namespace != "" && o.namespace != f.namespace) {
		return false
	}
	if f.shard != nil {
		h := o.uidHash
		if f.shard.Field == shardselector.FieldNamespace {
			h = shardselector.Hash(o.namespace)
		}
		if !f.shard.MatchesHash(h) {
			return false
		}
	}
	if f.label != nil && !f.label.Matches(o.labels) {
		return false
	}
	if f.field != nil && !f.field.Matches(objectFields{o}) {
		return false
	}
	return true
}

// continueToken is the decoded form of a list continuation: the snapshot
// resourceVersion and the first key of the next page.
type continueToken struct {
	V     string `json:"v"`
	RV    uint64 `json:"rv"`
	Start string `json:"start"`
}

const continueVersion = "apisim/v1"

func encodeContinue(rv uint64, lastKey string) string {
	b, _ := json.Marshal(continueToken{V: continueVersion, RV: rv, Start: lastKey + "\x00"})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(s string) (continueToken, error) {
	var t continueToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	if err == nil && (t.V != continueVersion || t.RV == 0 || t.Start == "") {
		err = fmt.Errorf("unsupported token")
	}
	if err != nil {
		return t, badRequest("invalid continue token: %v", err)
	}
	return t, nil
}

// tooLargeRV is the API server's error for a resourceVersion it has not
// reached: 504 Timeout with cause ResourceVersionTooLarge, retry after 1s.
func tooLargeRV(want, have uint64) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", want, have), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version",
	}}
	return err
}

func parseRV(s string) (uint64, error) {
	rv, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, badRequest("invalid resource version %q: %v", s, err)
	}
	return rv, nil
}

// waitForRV waits until the store reaches rv or cfg.ResourceVersionWait
// passes, returning the current state and whether rv was reached.
func (s *Server) waitForRV(r *http.Request, rv uint64) (*state, bool) {
	deadline := time.Now().Add(s.cfg.ResourceVersionWait)
	for {
		cur := s.st.cur.Load()
		if cur.rv >= rv {
			return cur, true
		}
		if time.Now().After(deadline) {
			return cur, false
		}
		select {
		case <-r.Context().Done():
			return cur, false
		case <-s.closing:
			return cur, false
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// resolveList picks the snapshot a LIST reads: the tree, its RV, and the
// first key.
func (s *Server) resolveList(r *http.Request, res *apiResource, ns string, o *listOptions) (btree, uint64, string, error) {
	from, _ := res.keyRange(ns)
	if o.continueToken != "" {
		if o.resourceVersion != "" && o.resourceVersion != "0" {
			return btree{}, 0, "", badRequest("specifying resource version is not allowed when using continue")
		}
		tok, err := decodeContinue(o.continueToken)
		if err != nil {
			return btree{}, 0, "", err
		}
		if !strings.HasPrefix(tok.Start, from) {
			return btree{}, 0, "", badRequest("invalid continue token: key %q is outside the requested namespace", tok.Start)
		}
		cur := s.st.cur.Load()
		if tok.RV > cur.rv {
			return btree{}, 0, "", badRequest("invalid continue token: resourceVersion %d is in the future", tok.RV)
		}
		if tok.RV < s.st.minRV.Load() {
			return btree{}, 0, "", errContinueExpired()
		}
		t, err := s.st.snapshotAt(tok.RV)
		if err != nil {
			return btree{}, 0, "", errContinueExpired()
		}
		return t, tok.RV, tok.Start, nil
	}
	if o.resourceVersion == "" || o.resourceVersion == "0" {
		cur := s.st.cur.Load()
		return cur.tree, cur.rv, from, nil
	}
	want, err := parseRV(o.resourceVersion)
	if err != nil {
		return btree{}, 0, "", err
	}
	exact := o.match == metav1.ResourceVersionMatchExact || (o.match == "" && o.limit > 0)
	cur, ok := s.waitForRV(r, want)
	if !ok {
		return btree{}, 0, "", tooLargeRV(want, cur.rv)
	}
	if !exact || want == cur.rv {
		return cur.tree, cur.rv, from, nil
	}
	if want < s.st.minRV.Load() {
		return btree{}, 0, "", errExpired(want)
	}
	t, err := s.st.snapshotAt(want)
	if err != nil {
		return btree{}, 0, "", err
	}
	return t, want, from, nil
}

func errContinueExpired() error {
	return apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
		"objects that were created, modified, or deleted between the time the first chunk was returned and now may " +
		"show up in the list.")
}

// collect returns the objects of tree in [start, end of f's namespace)
// matching f, at most limit (0: all), and whether more keys follow in the
// range.
func collect(tree btree, start string, f *filter, limit int64) (items []*object, more bool) {
	_, end := f.res.keyRange(f.namespace)
	if limit == 0 {
		items = make([]*object, 0, tree.Rank(end)-tree.Rank(start))
	}
	tree.Ascend(start, func(key string, o *object) bool {
		if key >= end {
			return false
		}
		if limit > 0 && int64(len(items)) == limit {
			more = true
			return false
		}
		if f.matches(o) {
			items = append(items, o)
		}
		return true
	})
	return items, more
}

func (s *Server) serveList(w http.ResponseWriter, r *http.Request, f *filter, o *listOptions, fm format) {
	tree, rv, start, err := s.resolveList(r, f.res, f.namespace, o)
	if err != nil {
		writeStatus(w, r, err)
		return
	}
	if fm.convert == asPartial {
		writeStatus(w, r, notAcceptable(fmt.Sprintf(
			"you requested PartialObjectMetadata, but the requested object is a list (*%sList)", f.res.internalType)))
		return
	}
	limit := o.limit
	if o.resourceVersion == "0" {
		// As the API server's watch cache (cacher.computeListLimit in
		// k8s.io/apiserver v0.36): a list at any resourceVersion is served
		// whole, whatever the limit — as client-go's reflector assumes when
		// it pages such a list — and so is the rest of a continue token's
		// snapshot presented with resourceVersion "0" (the cache serves the
		// token from its snapshot at the token's resourceVersion and then
		// ignores the limit). listrv_e2e_test.go checks both against
		// kube-apiserver v1.36.3.
		limit = 0
	}
	items, more := collect(tree, start, f, limit)
	meta := metav1.ListMeta{ResourceVersion: strconv.FormatUint(rv, 10)}
	if more {
		last := items[len(items)-1].key
		meta.Continue = encodeContinue(rv, last)
		if f.label == nil && f.field == nil {
			// As the API server's storage: the keys from the page's start
			// less the limit, computed even under a shard selector (which
			// its SelectionPredicate.Empty does not count).
			_, end := f.res.keyRange(f.namespace)
			remaining := int64(tree.Rank(end)-tree.Rank(start)) - limit
			meta.RemainingItemCount = &remaining
		}
		s.st.snapshots.put(rv, tree)
	}
	if f.shard != nil && !f.res.custom && !fm.view.meta {
		// Only typed lists carry it: unstructured lists do not implement
		// metav1.ShardedListInterface, and the PartialObjectMetadataList
		// conversion does not copy it (kube-apiserver v1.36).
		meta.ShardInfo = &metav1.ShardInfo{Selector: f.shard.String()}
	}

	enc := newEncodeAhead(items, fm.view.encoding(fm.ct))
	defer enc.stop()
	if fm.ct == ctProtobuf {
		enc.all() // the protobuf list header needs every item's size
	}
	w.Header().Set("Content-Type", fm.ct.mediaType())
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(countingWriter{w, &s.stats.bytes}, 256<<10)
	fw := &frameWriter{ct: fm.ct, v: fm.view, w: bw}
	if err := fw.writeList(meta, items, enc.at); err != nil {
		return
	}
	_ = bw.Flush()
	s.stats.listed.Add(uint64(len(items)))
}

// notAcceptable is the API server's error for a transformation the
// requested object does not allow.
func notAcceptable(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable, Message: msg,
	}}
}
