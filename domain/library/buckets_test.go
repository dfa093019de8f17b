package library

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestBucketsFor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    Visibility
		want []string
	}{
		{VisibilityPublic, []string{BucketPrivate, BucketLoggedIn, BucketPublic}},
		{VisibilityLoggedIn, []string{BucketPrivate, BucketLoggedIn}},
		{VisibilityPrivate, []string{BucketPrivate}},
		{"", []string{BucketPrivate}},
		{"unknown", []string{BucketPrivate}},
	} {
		if got := BucketsFor(c.v); !slices.Equal(got, c.want) {
			t.Errorf("BucketsFor(%q) = %v, want %v", c.v, got, c.want)
		}
	}
}

// TestEveryLevelHasItsBucket reads the package's constants: every bucket
// constant is in Buckets (the list the stores write and the rebuild
// sweeps), and every visibility has the bucket named after it (BucketsFor
// finds an item's buckets by that name). A level added as a constant but
// not to the list fails here.
func TestEveryLevelHasItsBucket(t *testing.T) {
	t.Parallel()
	dir, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var buckets, visibilities []string
	for _, de := range dir {
		if !strings.HasSuffix(de.Name(), ".go") || strings.HasSuffix(de.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), de.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i >= len(vs.Values) {
						break
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, _ := strconv.Unquote(lit.Value)
					switch {
					case strings.HasPrefix(n.Name, "Bucket"):
						buckets = append(buckets, v)
					case strings.HasPrefix(n.Name, "Visibility"):
						visibilities = append(visibilities, v)
					}
				}
			}
		}
	}
	if len(buckets) < 3 || len(visibilities) < 3 {
		t.Fatalf("found buckets %v and visibilities %v; the scan is broken", buckets, visibilities)
	}
	all := Buckets()
	for _, b := range buckets {
		if !slices.Contains(all, b) {
			t.Errorf("bucket %q is not in Buckets() %v: no store would write it", b, all)
		}
	}
	for _, v := range visibilities {
		if !slices.Contains(all, v) {
			t.Errorf("visibility %q has no bucket in Buckets() %v", v, all)
		}
	}
}
