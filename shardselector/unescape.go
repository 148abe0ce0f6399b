package shardselector

import (
	"errors"
	"strings"
	"unicode/utf8"
)

var newlines = strings.NewReplacer("\r\n", "\n", "\r", "\n")

var errUnescape = errors.New("unable to unescape string")

// unquote returns the value of a STRING token's text (bytes: the text after
// the b/B prefix), with cel-go's rules: line breaks normalised to \n, raw
// strings taken verbatim, escapes as in GoogleSQL (\x and octal escapes are
// code points in strings and bytes in bytes literals; \u and \U are not
// allowed in bytes).
func unquote(text string, isBytes bool) (string, error) {
	s := newlines.Replace(text)
	if len(s) < 2 {
		return "", errUnescape
	}
	raw := s[0] == 'r' || s[0] == 'R'
	if raw {
		s = s[1:]
	}
	n := len(s)
	if s[0] != s[n-1] || (s[0] != '"' && s[0] != '\'') {
		return "", errUnescape
	}
	if n >= 6 {
		for _, q := range []string{"'''", `"""`} {
			if strings.HasPrefix(s, q) {
				if !strings.HasSuffix(s, q) {
					return "", errUnescape
				}
				s = `"` + s[3:n-3] + `"`
				break
			}
		}
	}
	s = s[1 : len(s)-1]
	if raw || !strings.Contains(s, `\`) {
		return s, nil
	}
	out := make([]byte, 0, len(s))
	for len(s) > 0 {
		if s[0] >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s)
			out = utf8.AppendRune(out, r)
			s = s[size:]
			continue
		}
		if s[0] != '\\' {
			out = append(out, s[0])
			s = s[1:]
			continue
		}
		if len(s) == 1 {
			return "", errors.New(`unable to unescape string, found '\' as last character`)
		}
		v, asByte, rest, err := unescapeOne(s[1], s[2:], isBytes)
		if err != nil {
			return "", err
		}
		s = rest
		if v < utf8.RuneSelf || asByte {
			out = append(out, byte(v))
		} else {
			out = utf8.AppendRune(out, v)
		}
	}
	return string(out), nil
}

var simpleEscapes = map[byte]rune{
	'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v',
	'\\': '\\', '\'': '\'', '"': '"', '`': '`', '?': '?',
}

// unescapeOne decodes the escape \c followed by s. asByte reports that the
// value is one byte rather than a code point to encode as UTF-8.
func unescapeOne(c byte, s string, isBytes bool) (v rune, asByte bool, rest string, err error) {
	if r, ok := simpleEscapes[c]; ok {
		return r, false, s, nil
	}
	switch c {
	case 'x', 'X', 'u', 'U':
		n := map[byte]int{'x': 2, 'X': 2, 'u': 4, 'U': 8}[c]
		if isBytes && (c == 'u' || c == 'U') {
			return 0, false, "", errUnescape
		}
		if len(s) < n {
			return 0, false, "", errUnescape
		}
		for j := 0; j < n; j++ {
			d, ok := hexValue(s[j])
			if !ok {
				return 0, false, "", errUnescape
			}
			v = v<<4 | d
		}
		if !isBytes && !utf8.ValidRune(v) {
			return 0, false, "", errors.New("invalid unicode code point")
		}
		return v, isBytes, s[n:], nil
	case '0', '1', '2', '3':
		if len(s) < 2 || s[0] < '0' || s[0] > '7' || s[1] < '0' || s[1] > '7' {
			return 0, false, "", errors.New("unable to unescape octal sequence in string")
		}
		v = rune(c-'0')*64 + rune(s[0]-'0')*8 + rune(s[1]-'0')
		return v, isBytes, s[2:], nil
	}
	return 0, false, "", errUnescape
}

func hexValue(b byte) (rune, bool) {
	switch {
	case b >= '0' && b <= '9':
		return rune(b - '0'), true
	case b >= 'a' && b <= 'f':
		return rune(b-'a') + 10, true
	case b >= 'A' && b <= 'F':
		return rune(b-'A') + 10, true
	}
	return 0, false
}
