package analysis

import (
	"fmt"
	"strconv"
	"strings"
)

// Condition judges one value of a query's result. It is written as a threshold
// ("< 0.01", ">= 0.95"), a range ("> 0.9 && <= 1"), or an expression over the
// result ("result < 0.25 || result > 10"): comparisons of `result` with numbers,
// joined by && (binding first) and ||, with no parentheses.
type Condition struct {
	text string
	// any holds alternatives (||), each a conjunction (&&) of comparisons.
	any [][]comparison
}

type comparison struct {
	op    string
	bound float64
}

// String is the condition as written.
func (c *Condition) String() string { return c.text }

// Holds says whether value v meets the condition. NaN meets none.
func (c *Condition) Holds(v float64) bool {
	for _, all := range c.any {
		ok := true
		for _, cmp := range all {
			ok = ok && cmp.holds(v)
		}
		if ok {
			return true
		}
	}
	return false
}

func (c comparison) holds(v float64) bool {
	switch c.op {
	case "<":
		return v < c.bound
	case "<=":
		return v <= c.bound
	case ">":
		return v > c.bound
	case ">=":
		return v >= c.bound
	case "==":
		return v == c.bound
	case "!=":
		return v != c.bound
	}
	return false
}

// flipped is the operator with its sides swapped: 0.9 < result is result > 0.9.
var flipped = map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}

// ParseCondition reads a condition; the error says which part is wrong.
func ParseCondition(s string) (*Condition, error) {
	c := &Condition{text: strings.TrimSpace(s)}
	if c.text == "" {
		return nil, fmt.Errorf("empty: want a threshold like \"< 0.01\"")
	}
	for _, alt := range strings.Split(c.text, "||") {
		var all []comparison
		for _, part := range strings.Split(alt, "&&") {
			cmp, err := parseComparison(strings.TrimSpace(part))
			if err != nil {
				return nil, err
			}
			all = append(all, cmp)
		}
		c.any = append(c.any, all)
	}
	return c, nil
}

// parseComparison reads "< 0.01", "result < 0.01" or "0.01 > result".
func parseComparison(s string) (comparison, error) {
	want := fmt.Errorf("%q is not a comparison like \"< 0.01\" or \"result >= 0.95\"", s)
	if s == "" {
		return comparison{}, want
	}
	rest := strings.TrimSpace(strings.TrimPrefix(s, "result"))
	swap := false
	if rest == s && !startsWithOp(s) {
		// "0.01 > result": a number first.
		i := strings.IndexAny(s, "<>=!")
		if i <= 0 || !strings.HasSuffix(s, "result") {
			return comparison{}, want
		}
		num := strings.TrimSpace(s[:i])
		rest = strings.TrimSpace(strings.TrimSuffix(s[i:], "result")) + " " + num
		swap = true
	}
	for _, op := range []string{"<=", ">=", "==", "!=", "<", ">"} {
		if num, ok := strings.CutPrefix(rest, op); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
			if err != nil {
				return comparison{}, want
			}
			if swap {
				op = flipped[op]
			}
			return comparison{op: op, bound: v}, nil
		}
	}
	return comparison{}, want
}

func startsWithOp(s string) bool { return strings.IndexAny(s[:1], "<>=!") == 0 }
