package ratelimit

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
)

type cfg = Config[string]

func TestConfigValidate(t *testing.T) {
	rl := workqueue.DefaultTypedControllerRateLimiter[string]()
	for _, tc := range []struct {
		name string
		cfg  cfg
		want string // substring of the error; "" for valid
	}{
		{"zero", cfg{}, ""},
		{"inf-limit-zero-burst", cfg{Limit: rate.Inf}, ""},
		{"base-equals-max", cfg{BaseDelay: time.Second, MaxDelay: time.Second}, ""},
		{"rate-limiter", cfg{RateLimiter: rl}, ""},
		{"metrics-with-name", cfg{MetricsProvider: newRecProvider()}, ""}, // Name is set below
		{"negative-limit", cfg{Limit: -1}, "Limit"},
		{"nan-limit", cfg{Limit: rate.Limit(math.NaN())}, "Limit"},
		{"negative-burst", cfg{Burst: -1}, "Burst"},
		{"negative-base", cfg{BaseDelay: -time.Second}, "BaseDelay"},
		{"negative-max", cfg{MaxDelay: -time.Second}, "MaxDelay"},
		{"max-below-base", cfg{BaseDelay: time.Second, MaxDelay: time.Millisecond}, "below BaseDelay"},
		{"base-above-default-max", cfg{BaseDelay: 2 * DefaultMaxDelay}, "below BaseDelay"},
		{"max-below-default-base", cfg{MaxDelay: time.Millisecond}, "below BaseDelay"},
		{"rate-limiter-and-builtin-fields", cfg{RateLimiter: rl, BaseDelay: time.Second}, "RateLimiter is set"},
		{"negative-update-period", cfg{UnfinishedWorkUpdatePeriod: -1}, "UnfinishedWorkUpdatePeriod"},
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

// Metrics are labelled by Name: a provider without a name is refused rather
// than silently unused, as client-go does.
func TestNewRejectsProviderWithoutName(t *testing.T) {
	_, err := New(cfg{MetricsProvider: newRecProvider()})
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "Name is empty") {
		t.Fatalf("New = %v; want ErrInvalidConfig about the empty Name", err)
	}
	if _, err := New(cfg{BaseDelay: -1}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("New with a negative BaseDelay: err = %v, want ErrInvalidConfig", err)
	}
}

func TestConfigDefaults(t *testing.T) {
	d := cfg{}.withDefaults()
	if d.Limit != 10 || d.Burst != 100 || d.BaseDelay != 5*time.Millisecond || d.MaxDelay != 1000*time.Second ||
		d.Clock == nil || d.UnfinishedWorkUpdatePeriod != 500*time.Millisecond {
		t.Fatalf("defaults = %+v", d)
	}
}
