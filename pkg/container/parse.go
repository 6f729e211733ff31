package container

import (
	"fmt"
	"strings"
)

// The shell subset a simulated container understands, in its command, its args and in
// exec (probes and `kubectl exec`):
//
//   - lists: `a; b`, `a && b`, `a || b`, newlines as `;`, `&` at the end of a command
//     (run in the background: taken as `;`); and-or lists evaluate left to right as
//     POSIX says (`false && x || y` runs y).
//   - words: 'single quotes', "double quotes", backslash escapes, $VAR, ${VAR}, $? and
//     ${VAR:-default}; assignments `X=1` and `export X=1` set the environment of what
//     follows.
//   - redirections: `> file`, `>> file`, `2>&1`, `2>/dev/null`, `>/dev/null`.
//   - commands: the builtins of builtins.go (exit, sleep, true, false, echo, cat, ls,
//     mv, cp, rm, touch, mkdir, test, [, env, hostname, printenv, :) and the programs
//     the image provides (its servers, its tools such as redis-cli ping).
//
// Anything else — pipes, $(...), `if`, `while`, `for`, functions, a program neither
// built in nor provided by the image — is not understood. A script that is not
// understood is taken as a long-running process (the container runs and never exits,
// and says so in its log); an exec that is not understood does not return (a probe
// times out).

// word is one shell word: literal parts and variable references, expanded when its
// command runs (so that `X=1; echo $X` sees the assignment).
type word []part

type part struct {
	lit    string
	name   string // variable name ("?" for the last exit code); empty for a literal
	def    string // ${name:-def}
	hasDef bool
}

// step is one simple command and how it joins the one before it.
type step struct {
	op       string // ";" (always run), "&&" (after success), "||" (after failure)
	words    []word
	redirect string // file its standard output goes to; "" for the log
	appendTo bool   // >> rather than >
}

// errNotUnderstood is the parse error of a script outside the subset.
type errNotUnderstood struct{ what string }

func (e errNotUnderstood) Error() string { return "not understood: " + e.what }

var keywords = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "for": true, "while": true,
	"until": true, "do": true, "done": true, "case": true, "esac": true, "function": true,
	"{": true, "}": true, "(": true, ")": true, "!": true, "trap": true, "read": true, "source": true, ".": true,
}

// parseScript splits a `sh -c` script into steps.
func parseScript(src string) ([]step, error) {
	toks, err := tokenize(src)
	if err != nil {
		return nil, err
	}
	var steps []step
	cur := step{op: ";"}
	flush := func(nextOp string) error {
		if len(cur.words) == 0 {
			if cur.redirect != "" || nextOp != ";" {
				return errNotUnderstood{"empty command"}
			}
			cur.op = nextOp
			return nil
		}
		steps = append(steps, cur)
		cur = step{op: nextOp}
		return nil
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.op == ";" || t.op == "&":
			if err := flush(";"); err != nil {
				return nil, err
			}
		case t.op == "&&" || t.op == "||":
			if len(cur.words) == 0 {
				return nil, errNotUnderstood{t.op + " without a command before it"}
			}
			if err := flush(t.op); err != nil {
				return nil, err
			}
		case t.op == ">" || t.op == ">>":
			if i+1 >= len(toks) || toks[i+1].op != "" {
				return nil, errNotUnderstood{"redirection without a file"}
			}
			i++
			cur.redirect, cur.appendTo = literal(toks[i].w), t.op == ">>"
		case t.op == "2>&1" || t.op == "2>":
			if t.op == "2>" {
				if i+1 >= len(toks) || toks[i+1].op != "" {
					return nil, errNotUnderstood{"redirection without a file"}
				}
				i++
			}
		case t.op != "":
			return nil, errNotUnderstood{"the operator " + t.op}
		default:
			if len(cur.words) == 0 && keywords[literal(t.w)] && !t.quoted {
				return nil, errNotUnderstood{"the shell keyword " + literal(t.w)}
			}
			cur.words = append(cur.words, t.w)
		}
	}
	if len(cur.words) > 0 {
		steps = append(steps, cur)
	} else if cur.op != ";" {
		return nil, errNotUnderstood{cur.op + " without a command after it"}
	}
	return steps, nil
}

// literal is a word's text with variable references written back as $name; used for
// keywords and redirection targets, which are rarely expanded.
func literal(w word) string {
	var b strings.Builder
	for _, p := range w {
		if p.name != "" {
			b.WriteString("$" + p.name)
		} else {
			b.WriteString(p.lit)
		}
	}
	return b.String()
}

type token struct {
	w      word
	op     string
	quoted bool
}

// tokenize splits src into words and operators.
func tokenize(src string) ([]token, error) {
	var toks []token
	var cur word
	inWord, quoted := false, false
	lit := func(s string) {
		if n := len(cur); n > 0 && cur[n-1].name == "" {
			cur[n-1].lit += s
		} else {
			cur = append(cur, part{lit: s})
		}
		inWord = true
	}
	end := func() {
		if inWord {
			toks = append(toks, token{w: cur, quoted: quoted})
		}
		cur, inWord, quoted = nil, false, false
	}
	// dollar adds the reference at s[0] == '$' to the word (a lone '$' is literal) and
	// says how many bytes it took.
	dollar := func(s string) (int, error) {
		n, p, err := variable(s)
		switch {
		case err != nil:
			return 0, err
		case n == 1:
			lit("$")
		default:
			cur = append(cur, p)
			inWord = true
		}
		return n, nil
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == ' ' || c == '\t':
			end()
		case c == '\n' || c == ';':
			end()
			toks = append(toks, token{op: ";"})
		case c == '#' && !inWord:
			for i < len(src) && src[i] != '\n' {
				i++
			}
			i--
		case c == '&' || c == '|':
			end()
			if i+1 < len(src) && src[i+1] == c {
				toks = append(toks, token{op: string([]byte{c, c})})
				i++
			} else if c == '&' {
				toks = append(toks, token{op: "&"})
			} else {
				return nil, errNotUnderstood{"a pipe"}
			}
		case c == '2' && !inWord && strings.HasPrefix(src[i:], "2>&1"):
			end()
			toks = append(toks, token{op: "2>&1"})
			i += 3
		case c == '2' && !inWord && strings.HasPrefix(src[i:], "2>"):
			end()
			toks = append(toks, token{op: "2>"})
			i++
		case c == '>':
			end()
			if i+1 < len(src) && src[i+1] == '>' {
				toks = append(toks, token{op: ">>"})
				i++
			} else {
				toks = append(toks, token{op: ">"})
			}
		case c == '<' || c == '(' || c == ')' || c == '`':
			return nil, errNotUnderstood{fmt.Sprintf("%q", string(c))}
		case c == '\\':
			if i+1 < len(src) {
				i++
				if src[i] != '\n' {
					lit(string(src[i]))
				}
			}
		case c == '\'':
			j := strings.IndexByte(src[i+1:], '\'')
			if j < 0 {
				return nil, errNotUnderstood{"an unterminated quote"}
			}
			lit(src[i+1 : i+1+j])
			quoted = true
			i += j + 1
		case c == '"':
			i++
			quoted = true
			inWord = true
			for ; i < len(src) && src[i] != '"'; i++ {
				switch {
				case src[i] == '\\' && i+1 < len(src) && strings.IndexByte("\"\\$`", src[i+1]) >= 0:
					i++
					lit(string(src[i]))
				case src[i] == '$':
					n, err := dollar(src[i:])
					if err != nil {
						return nil, err
					}
					i += n - 1
				case src[i] == '`':
					return nil, errNotUnderstood{"command substitution"}
				default:
					lit(string(src[i]))
				}
			}
			if i >= len(src) {
				return nil, errNotUnderstood{"an unterminated quote"}
			}
		case c == '$':
			n, err := dollar(src[i:])
			if err != nil {
				return nil, err
			}
			i += n - 1
		default:
			lit(string(c))
		}
	}
	end()
	return toks, nil
}

// variable reads a reference at s[0] == '$': its length and the part; a lone '$' has
// length 1.
func variable(s string) (int, part, error) {
	if len(s) < 2 {
		return 1, part{}, nil
	}
	switch c := s[1]; {
	case c == '?' || c == '$' || c == '#' || c == '@' || c == '*' || (c >= '0' && c <= '9'):
		if c != '?' {
			return 0, part{}, errNotUnderstood{"$" + string(c)}
		}
		return 2, part{name: "?"}, nil
	case c == '(':
		return 0, part{}, errNotUnderstood{"command substitution"}
	case c == '{':
		j := strings.IndexByte(s, '}')
		if j < 0 {
			return 0, part{}, errNotUnderstood{"an unterminated ${"}
		}
		body := s[2:j]
		if name, def, ok := strings.Cut(body, ":-"); ok && isName(name) {
			return j + 1, part{name: name, def: def, hasDef: true}, nil
		}
		if !isName(body) {
			return 0, part{}, errNotUnderstood{"${" + body + "}"}
		}
		return j + 1, part{name: body}, nil
	}
	n := 1
	for n < len(s) && isNameByte(s[n], n == 1) {
		n++
	}
	if n == 1 {
		return 1, part{}, nil
	}
	return n, part{name: s[1:n]}, nil
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i], i == 0) {
			return false
		}
	}
	return true
}

func isNameByte(c byte, first bool) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9')
}
