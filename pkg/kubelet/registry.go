package kubelet

import (
	_ "embed"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/distribution/reference"
	"sigs.k8s.io/yaml"
)

// builtinCatalog lists, for well-known public repositories, the tags that exist.
//
//go:embed catalog.yaml
var builtinCatalog []byte

// UnknownImages says what pulling an image of a repository the catalogue does not list does.
type UnknownImages string

const (
	// UnknownImagesPull pulls it, whatever its tag: the registry is assumed to have it.
	UnknownImagesPull UnknownImages = "pull"
	// UnknownImagesFail fails it as a registry fails a repository it does not have.
	UnknownImagesFail UnknownImages = "fail"
)

// ParseUnknownImages reads "pull" or "fail".
func ParseUnknownImages(s string) (UnknownImages, error) {
	switch u := UnknownImages(s); u {
	case UnknownImagesPull, UnknownImagesFail:
		return u, nil
	}
	return "", fmt.Errorf("unknown images policy %q: use pull or fail", s)
}

// Waiting reasons of a container whose image does not pull, as the kubelet reports them.
const (
	reasonInvalidImageName = "InvalidImageName"
)

// PullResult is what pulling one image does on a simulated node.
type PullResult struct {
	// OK is true when the image pulls.
	OK bool
	// Reason is the container's waiting reason when it does not: ErrImagePull (the
	// kubelet retries with back-off, showing ImagePullBackOff between attempts) or
	// InvalidImageName (never retried). Empty when OK.
	Reason string
	// Message is the waiting message the kubelet shows with Reason.
	Message string
}

// CatalogRepository is one repository of an image catalogue: its name as a pod would
// write it ("nginx", "registry.example.com/team/app") and the tags it has. A tag may use
// brace expansion ("1.2{5,6}.{0..3}") and '*' for any run of characters ("v*").
type CatalogRepository struct {
	Name string   `json:"name"`
	Tags []string `json:"tags"`
}

// catalogFile is the YAML (or JSON) form of a catalogue:
//
//	repositories:
//	- name: registry.example.com/team/app
//	  tags: ["v1", "v2.{0..3}", "nightly-*"]
type catalogFile struct {
	Repositories []CatalogRepository `json:"repositories"`
}

// Registry is the simulated image registry every simulated node pulls from. Its
// catalogue lists, for some repositories, the tags that exist; a tag it does not list
// fails as a missing tag fails on a real node. Images of other repositories pull, or
// fail, as Unknown says. A reference by digest pulls: the catalogue lists tags, not
// digests, and a digest in a pod spec was almost always copied from a real registry.
type Registry struct {
	repos   map[string]*repoTags
	unknown UnknownImages
}

// repoTags are the tags of one repository: exact ones, and '*' patterns.
type repoTags struct {
	exact    map[string]bool
	patterns []*regexp.Regexp
}

// NewRegistry returns the built-in catalogue extended by extra (tags of a repository in
// both are added together), with unknown deciding images of repositories listed in neither.
func NewRegistry(unknown UnknownImages, extra ...CatalogRepository) (*Registry, error) {
	if _, err := ParseUnknownImages(string(unknown)); err != nil {
		return nil, err
	}
	var builtin catalogFile
	if err := yaml.UnmarshalStrict(builtinCatalog, &builtin); err != nil {
		return nil, fmt.Errorf("built-in image catalogue: %w", err)
	}
	r := &Registry{repos: map[string]*repoTags{}, unknown: unknown}
	if err := r.add(builtin.Repositories); err != nil {
		return nil, fmt.Errorf("built-in image catalogue: %w", err)
	}
	if err := r.add(extra); err != nil {
		return nil, err
	}
	return r, nil
}

// DefaultRegistry is the built-in catalogue, with images of other repositories pulling.
func DefaultRegistry() *Registry {
	r, err := NewRegistry(UnknownImagesPull)
	if err != nil {
		panic(err) // the embedded catalogue is tested
	}
	return r
}

// LoadImageCatalogFile reads the repositories of a catalogue file and checks every one,
// so that a bad entry is reported with the file's name before anything starts.
func LoadImageCatalogFile(path string) ([]CatalogRepository, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("image catalog: %w", err)
	}
	var f catalogFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("image catalog %s: %w (want repositories: [{name: REPOSITORY, tags: [TAG, ...]}])", path, err)
	}
	if len(f.Repositories) == 0 {
		return nil, fmt.Errorf("image catalog %s: no repositories; want repositories: [{name: REPOSITORY, tags: [TAG, ...]}]", path)
	}
	if err := (&Registry{repos: map[string]*repoTags{}}).add(f.Repositories); err != nil {
		return nil, fmt.Errorf("image catalog %s: %w", path, err)
	}
	return f.Repositories, nil
}

// maxTagsPerEntry bounds what one brace pattern may expand to, so a typo such as
// "{0..99999999}" is an error instead of an out-of-memory.
const maxTagsPerEntry = 100000

// tagRegexp is the syntax of a tag (github.com/distribution/reference).
var tagRegexp = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)

// add adds repos to the catalogue, checking each name and tag.
func (r *Registry) add(repos []CatalogRepository) error {
	seen := map[string]bool{}
	for i, repo := range repos {
		named, err := reference.ParseNormalizedNamed(repo.Name)
		if err != nil {
			return fmt.Errorf("repository %d (%q): %v", i+1, repo.Name, err)
		}
		if !reference.IsNameOnly(named) {
			return fmt.Errorf("repository %d (%q): write the repository without a tag or digest, and list tags under tags", i+1, repo.Name)
		}
		name := named.Name()
		if seen[name] {
			return fmt.Errorf("repository %q is listed twice", name)
		}
		seen[name] = true
		if len(repo.Tags) == 0 {
			return fmt.Errorf("repository %q lists no tags", repo.Name)
		}
		tags := r.repos[name]
		if tags == nil {
			tags = &repoTags{exact: map[string]bool{}}
			r.repos[name] = tags
		}
		for _, pattern := range repo.Tags {
			expanded, err := expandBraces(pattern, maxTagsPerEntry)
			if err != nil {
				return fmt.Errorf("repository %q, tag %q: %v", repo.Name, pattern, err)
			}
			for _, tag := range expanded {
				if !tagRegexp.MatchString(strings.ReplaceAll(tag, "*", "x")) {
					return fmt.Errorf("repository %q, tag %q: %q is not a valid tag (letters, digits, '_', '.', '-', at most 128, not starting with '.' or '-')", repo.Name, pattern, tag)
				}
				if strings.Contains(tag, "*") {
					tags.patterns = append(tags.patterns, globToRegexp(tag))
				} else {
					tags.exact[tag] = true
				}
			}
		}
	}
	return nil
}

// Pull is what pulling image does, as a node's kubelet and containerd report it:
//
//	nginx:1.16.1   → OK (a tag nginx has)
//	nginx          → OK (nginx:latest)
//	nginx:1.161    → ErrImagePull: … "docker.io/library/nginx:1.161": not found
//	nginx@sha256:… → OK (digests are not catalogued)
//	team/app:v9    → OK, or with UnknownImagesFail: ErrImagePull (pull access denied)
//	Nginx:1.16     → InvalidImageName: … repository name must be lowercase
func (r *Registry) Pull(image string) PullResult {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return PullResult{Reason: reasonInvalidImageName,
			Message: fmt.Sprintf("Failed to apply default image tag %q: couldn't parse image name %q: %v", image, image, err)}
	}
	if _, digested := named.(reference.Digested); digested {
		return PullResult{OK: true}
	}
	ref := reference.TagNameOnly(named).String()
	tag := "latest"
	if t, ok := named.(reference.Tagged); ok {
		tag = t.Tag()
	}
	tags, listed := r.repos[named.Name()]
	switch {
	case listed && tags.has(tag):
		return PullResult{OK: true}
	case listed:
		return notFound(ref)
	case r.unknown != UnknownImagesFail:
		return PullResult{OK: true}
	case reference.Domain(named) == "docker.io":
		// Docker Hub answers a repository it does not have (or will not show) with 401.
		return PullResult{Reason: reasonErrImagePull, Message: fmt.Sprintf(
			"rpc error: code = Unknown desc = failed to pull and unpack image %q: failed to resolve reference %q: pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed",
			ref, ref)}
	default:
		return notFound(ref)
	}
}

// notFound is containerd's error for a reference the registry does not have.
func notFound(ref string) PullResult {
	return PullResult{Reason: reasonErrImagePull, Message: fmt.Sprintf(
		"rpc error: code = NotFound desc = failed to pull and unpack image %q: failed to resolve reference %q: %s: not found", ref, ref, ref)}
}

func (t *repoTags) has(tag string) bool {
	if t.exact[tag] {
		return true
	}
	for _, p := range t.patterns {
		if p.MatchString(tag) {
			return true
		}
	}
	return false
}

// expandBraces expands a shell-style brace pattern: "a{b,c}" → ab, ac; "{1..3}" → 1, 2, 3;
// groups multiply ("{1,2}.{0..1}" → 1.0, 1.1, 2.0, 2.1) and nest ("1{,.{0..2}}" → 1,
// 1.0, 1.1, 1.2). At most limit results.
func expandBraces(s string, limit int) ([]string, error) {
	open := strings.IndexByte(s, '{')
	if open < 0 {
		if strings.IndexByte(s, '}') >= 0 {
			return nil, fmt.Errorf("'}' without '{'")
		}
		return []string{s}, nil
	}
	depth, close := 0, -1
	var commas []int
	for i := open; i < len(s) && close < 0; i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				close = i
			}
		case ',':
			if depth == 1 {
				commas = append(commas, i)
			}
		}
	}
	if close < 0 {
		return nil, fmt.Errorf("'{' without '}'")
	}
	prefix, inner, suffix := s[:open], s[open+1:close], s[close+1:]
	var alternatives []string
	if len(commas) > 0 {
		start := open + 1
		for _, c := range append(commas, close) {
			alternatives = append(alternatives, s[start:c])
			start = c + 1
		}
	} else {
		from, to, ok := strings.Cut(inner, "..")
		lo, err1 := strconv.Atoi(from)
		hi, err2 := strconv.Atoi(to)
		if !ok || err1 != nil || err2 != nil || lo > hi {
			return nil, fmt.Errorf("{%s}: want alternatives {a,b} or a range {0..9}", inner)
		}
		if hi-lo >= limit {
			return nil, fmt.Errorf("{%s} expands to more than %d tags", inner, limit)
		}
		for n := lo; n <= hi; n++ {
			alternatives = append(alternatives, strconv.Itoa(n))
		}
	}
	var out []string
	for _, a := range alternatives {
		more, err := expandBraces(prefix+a+suffix, limit)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
		if len(out) > limit {
			return nil, fmt.Errorf("expands to more than %d tags", limit)
		}
	}
	return out, nil
}
