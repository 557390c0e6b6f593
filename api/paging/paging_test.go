package paging

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/jaco-project/jaco/api/reason"
)

// pageOf fills a page from items keyed k00000, k00001, ... after the key the
// token names, as a server would.
func pageOf(t *testing.T, items []*wrapperspb.StringValue, size uint32, tok string) ([]*wrapperspb.StringValue, string) {
	t.Helper()
	after, err := After(tok)
	if err != nil {
		t.Fatal(err)
	}
	p := NewPage[*wrapperspb.StringValue](size)
	for i, it := range items {
		if key := fmt.Sprintf("k%05d", i); key > after && !p.Add(key, it) {
			break
		}
	}
	return p.Items, p.NextToken()
}

func values(n, size int) []*wrapperspb.StringValue {
	out := make([]*wrapperspb.StringValue, n)
	for i := range out {
		out[i] = wrapperspb.String(fmt.Sprintf("%03d", i) + strings.Repeat("x", size))
	}
	return out
}

func TestPagesAreBoundedByCountAndBytesAndGatherEverything(t *testing.T) {
	for _, tc := range []struct {
		name           string
		n, size        int
		pageSize       uint32
		wantPages      int
		wantMaxPerPage int
	}{
		{"count", 10, 10, 3, 4, 3},
		{"default count", 2500, 0, 0, 3, MaxItems},
		{"count beyond the cap", 2500, 0, 5000, 3, MaxItems},
		// 300 KiB items: three fit in 1 MiB, the fourth starts a page.
		{"bytes", 10, 300 << 10, 0, 4, 3},
		// An item above MaxBytes still travels, alone.
		{"one item bigger than a page", 3, MaxBytes + 1, 0, 3, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items := values(tc.n, tc.size)
			pages := 0
			got, err := Collect(func(tok string) ([]*wrapperspb.StringValue, string, error) {
				pages++
				page, next := pageOf(t, items, tc.pageSize, tok)
				if len(page) > tc.wantMaxPerPage {
					t.Errorf("page %d holds %d items, want at most %d", pages, len(page), tc.wantMaxPerPage)
				}
				if bytes := encoded(page); len(page) > 1 && bytes > MaxBytes {
					t.Errorf("page %d holds %d bytes of %d items, over %d", pages, bytes, len(page), MaxBytes)
				}
				return page, next, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if pages != tc.wantPages {
				t.Errorf("%d pages, want %d", pages, tc.wantPages)
			}
			if len(got) != tc.n {
				t.Fatalf("gathered %d items, want %d", len(got), tc.n)
			}
			for i, v := range got {
				if !proto.Equal(v, items[i]) {
					t.Fatalf("item %d is %.10q, want %.10q", i, v.Value, items[i].Value)
				}
			}
		})
	}
}

func encoded(items []*wrapperspb.StringValue) int {
	n := 0
	for _, it := range items {
		n += proto.Size(it) + 4
	}
	return n
}

func TestEmptyListingIsOnePageWithoutToken(t *testing.T) {
	p := NewPage[*wrapperspb.StringValue](0)
	if len(p.Items) != 0 || p.NextToken() != "" {
		t.Fatalf("empty page: %d items, token %q", len(p.Items), p.NextToken())
	}
}

func TestForeignTokenIsRefused(t *testing.T) {
	for _, tok := range []string{"k005", "p1.", "p1.!!!", "p2.azAwNQ"} {
		if _, err := After(tok); reason.Of(err) != reason.InvalidPageToken {
			t.Errorf("After(%q) = %v, want invalid_page_token", tok, err)
		}
	}
	if key, err := After(token("k005")); err != nil || key != "k005" {
		t.Fatalf("After(token(k005)) = %q, %v", key, err)
	}
}

func TestCollectRefusesTokensThatDoNotAdvance(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pages map[string][]string // token -> items, next
	}{
		{"same token again", map[string][]string{"": {"a", "t1"}, "t1": {"b", "t1"}}},
		{"back to an earlier token", map[string][]string{"": {"a", "t1"}, "t1": {"b", "t2"}, "t2": {"c", "t1"}}},
		{"empty page with a token", map[string][]string{"": {"a", "t1"}, "t1": {"", "t2"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			_, err := Collect(func(tok string) ([]string, string, error) {
				if calls++; calls > 10 {
					t.Fatal("Collect keeps asking")
				}
				p := tc.pages[tok]
				if p[0] == "" {
					return nil, p[1], nil
				}
				return []string{p[0]}, p[1], nil
			})
			if !errors.Is(err, ErrStuck) {
				t.Fatalf("Collect = %v, want ErrStuck", err)
			}
		})
	}
}

func TestCollectReturnsTheFetchError(t *testing.T) {
	boom := errors.New("boom")
	_, err := Collect(func(tok string) ([]string, string, error) {
		if tok == "" {
			return []string{"a"}, "t1", nil
		}
		return nil, "", boom
	})
	if err != boom {
		t.Fatalf("Collect = %v, want the fetch error as it is", err)
	}
}

func TestSplitKeepsOrderWithinPageBounds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		n, size  int
		wantRuns []int
	}{
		{"none", 0, 0, []int{0}},
		{"count", 2500, 0, []int{MaxItems, MaxItems, 500}},
		{"bytes", 7, 300 << 10, []int{3, 3, 1}},
		{"one item bigger than a page", 2, MaxBytes + 1, []int{1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items := values(tc.n, tc.size)
			runs := Split(items)
			var sizes []int
			var joined []*wrapperspb.StringValue
			for _, r := range runs {
				sizes = append(sizes, len(r))
				joined = append(joined, r...)
			}
			if fmt.Sprint(sizes) != fmt.Sprint(tc.wantRuns) {
				t.Errorf("runs of %v, want %v", sizes, tc.wantRuns)
			}
			if len(joined) != len(items) {
				t.Fatalf("%d items after Split, want %d", len(joined), len(items))
			}
			for i := range joined {
				if joined[i] != items[i] {
					t.Fatalf("item %d out of place", i)
				}
			}
		})
	}
}
