package kit

import (
	"math/rand/v2"
	"time"
)

// Backoff is base × 2^n, capped at max.
func Backoff(base, max time.Duration, n int) time.Duration {
	d := base
	for i := 0; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// Jitter returns a function adding up to fraction × d of random delay, so that
// repositories created together do not poll together.
func Jitter(fraction float64) func(time.Duration) time.Duration {
	return func(d time.Duration) time.Duration {
		return time.Duration(rand.Float64() * fraction * float64(d))
	}
}

// WithJitter is d plus jitter's extra delay (none when jitter is nil).
func WithJitter(jitter func(time.Duration) time.Duration, d time.Duration) time.Duration {
	if jitter == nil {
		return d
	}
	return d + jitter(d)
}
