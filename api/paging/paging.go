// Package paging cuts list replies into pages that each fit in one gRPC
// message, and gathers the pages back on the client
// (docs/adr/0019-list-paging.md). Split cuts a list a stream sends the
// same way.
//
// A paged listing is in key order (object ids). A page holds at most
// MaxItems items and MaxBytes of encoded items, and at least one item
// whatever its size: the bound on a service spec keeps any one object far
// below gRPC's default 4 MiB message limit. The page token names the last
// key sent; clients pass it back unread. A listing of several pages is not
// one snapshot: an object present from its first page to its last appears
// exactly once, one created or removed meanwhile may or may not.
package paging

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api/reason"
)

const (
	// MaxItems is a page's item count when the request asks for none, and
	// the most it may ask for.
	MaxItems = 1000
	// MaxBytes bounds the encoded items of a page (one item may pass it
	// alone): a quarter of gRPC's default message limit.
	MaxBytes = 1 << 20
	// maxPages bounds a client's gathering; a listing never has more pages
	// than items, and no store holds this many objects.
	maxPages = 1 << 22
)

// tokenPrefix tells a token this package made from any other string.
const tokenPrefix = "p1."

func token(key string) string {
	return tokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(key))
}

// After returns the key a page token resumes after, "" for the first page
// (an empty token). A token no server made is refused invalid_page_token.
func After(token string) (string, error) {
	if token == "" {
		return "", nil
	}
	rest, ok := strings.CutPrefix(token, tokenPrefix)
	key, err := base64.RawURLEncoding.DecodeString(rest)
	if !ok || err != nil || len(key) == 0 {
		return "", reason.Error(codes.InvalidArgument, reason.InvalidPageToken,
			"page token %q is not one this server gave; start the listing again with an empty token", token)
	}
	return string(key), nil
}

// Page fills one page of a listing, item by item in key order.
type Page[T proto.Message] struct {
	// Items are the items added.
	Items []T
	limit int
	bytes int
	last  string
	next  string
}

// NewPage starts a page of at most size items; 0, or more than MaxItems,
// is MaxItems.
func NewPage[T proto.Message](size uint32) *Page[T] {
	limit := MaxItems
	if size > 0 && size < MaxItems {
		limit = int(size)
	}
	return &Page[T]{limit: limit}
}

// Add appends item, whose key is key, when the page has room for it, and
// reports whether it did. The first item always fits. An item that does
// not fit ends the page: the next page starts with it.
func (p *Page[T]) Add(key string, item T) bool {
	if p.next != "" {
		return false
	}
	// What the item costs in the reply: its bytes, their length and the
	// field tag.
	n := proto.Size(item)
	size := n + protowire.SizeVarint(uint64(n)) + 2
	if len(p.Items) > 0 && (len(p.Items) >= p.limit || p.bytes+size > MaxBytes) {
		p.next = token(p.last)
		return false
	}
	p.Items = append(p.Items, item)
	p.bytes += size
	p.last = key
	return true
}

// NextToken is the token of the page after this one, "" when no item was
// left out (the listing ended with this page).
func (p *Page[T]) NextToken() string { return p.next }

// Split cuts items, in order, into runs that each fit a page (MaxItems
// items and MaxBytes, one item at least), for a stream that sends a long
// list in several messages. No items is one empty run: the one message
// that says so.
func Split[T proto.Message](items []T) [][]T {
	runs := [][]T{}
	for {
		p := NewPage[T](0)
		for _, it := range items {
			if !p.Add("", it) {
				break
			}
		}
		runs = append(runs, p.Items)
		items = items[len(p.Items):]
		if len(items) == 0 {
			return runs
		}
	}
}

// ErrStuck is a server whose page tokens do not advance: a token came back
// that the listing had already followed, or a page held nothing but a
// token.
var ErrStuck = errors.New("the server's page tokens do not advance")

// Collect gathers a listing page by page: fetch returns the items of the
// page that token names ("" for the first) and the next page's token, ""
// after the last page. A fetch error is returned as it is.
func Collect[T any](fetch func(token string) (items []T, next string, err error)) ([]T, error) {
	var all []T
	seen := map[string]bool{"": true}
	token := ""
	for pages := 1; ; pages++ {
		items, next, err := fetch(token)
		if err != nil {
			// As it is: a status error keeps its reason word and sentence
			// for the caller to print.
			return nil, err
		}
		all = append(all, items...)
		switch {
		case next == "":
			return all, nil
		case seen[next] || len(items) == 0:
			return nil, fmt.Errorf("page %d (%d items so far): %w", pages, len(all), ErrStuck)
		case pages >= maxPages:
			return nil, fmt.Errorf("more than %d pages: %w", maxPages, ErrStuck)
		}
		seen[next] = true
		token = next
	}
}
