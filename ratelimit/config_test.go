package ratelimit

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // substring of the error; "" for valid
	}{
		{"zero", Config{}, ""},
		{"inf-limit-zero-burst", Config{Limit: rate.Inf}, ""},
		{"base-equals-max", Config{BaseDelay: time.Second, MaxDelay: time.Second}, ""},
		{"negative-limit", Config{Limit: -1}, "Limit"},
		{"nan-limit", Config{Limit: rate.Limit(math.NaN())}, "Limit"},
		{"negative-burst", Config{Burst: -1}, "Burst"},
		{"negative-base", Config{BaseDelay: -time.Second}, "BaseDelay"},
		{"negative-max", Config{MaxDelay: -time.Second}, "MaxDelay"},
		{"max-below-base", Config{BaseDelay: time.Second, MaxDelay: time.Millisecond}, "below BaseDelay"},
		{"base-above-default-max", Config{BaseDelay: 2 * DefaultMaxDelay}, "below BaseDelay"},
		{"max-below-default-base", Config{MaxDelay: time.Millisecond}, "below BaseDelay"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Name = "q"
			err := tc.cfg.validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("validate: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("validate = %v; want ErrInvalidConfig mentioning %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), `"q"`) {
				t.Fatalf("error %q does not name the queue", err)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	d := Config{}.withDefaults()
	if d.Limit != 10 || d.Burst != 100 || d.BaseDelay != 5*time.Millisecond || d.MaxDelay != 1000*time.Second || d.Clock == nil {
		t.Fatalf("defaults = %+v", d)
	}
}
