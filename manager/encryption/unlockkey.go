package encryption

import (
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
)

// ErrMalformedUnlockKey is returned for text that is not an unlock key.
var ErrMalformedUnlockKey = errors.New("malformed unlock key")

// unlockKeyPrefix names the text format of an unlock key; a later format
// gets a new word.
const unlockKeyPrefix = "JACOKEY1-"

var unlockKeyEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// FormatUnlockKey is the text an operator keeps: JACOKEY1- and 52
// lowercase base32 characters (the same alphabet as tokens, ADR 0003).
func FormatUnlockKey(k Key) string {
	return unlockKeyPrefix + strings.ToLower(unlockKeyEncoding.EncodeToString(k[:]))
}

// ParseUnlockKey reverses FormatUnlockKey. Only surrounding white space (a
// pasted newline) is forgiven; the error never repeats the text.
func ParseUnlockKey(text string) (Key, error) {
	body, ok := strings.CutPrefix(strings.TrimSpace(text), unlockKeyPrefix)
	if !ok {
		return Key{}, fmt.Errorf("%w: want %s followed by 52 base32 characters", ErrMalformedUnlockKey, unlockKeyPrefix)
	}
	if strings.ToLower(body) != body {
		return Key{}, fmt.Errorf("%w: base32 part must be lowercase", ErrMalformedUnlockKey)
	}
	b, err := unlockKeyEncoding.DecodeString(strings.ToUpper(body))
	var k Key
	if err != nil || len(b) != len(k) {
		return Key{}, fmt.Errorf("%w: base32 part does not decode to %d bytes", ErrMalformedUnlockKey, len(k))
	}
	copy(k[:], b)
	return k, nil
}
