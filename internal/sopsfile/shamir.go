package sopsfile

import "errors"

// CombineShares recovers a data key from the Shamir shares of its key groups, as SOPS
// splits it with several key groups: each share is the polynomials' values at one
// point, followed by that point (one byte); the key is their value at 0, over
// GF(2^8) with the AES polynomial. Written here because SOPS' shamir package is the
// only implementation in reach and linking any SOPS package brings its key services.
func CombineShares(shares [][]byte) ([]byte, error) {
	if len(shares) < 2 {
		return nil, errors.New("fewer than two key group shares")
	}
	n := len(shares[0])
	if n < 2 {
		return nil, errors.New("a key group share is too short")
	}
	xs := make([]byte, len(shares))
	seen := map[byte]bool{}
	for i, s := range shares {
		if len(s) != n {
			return nil, errors.New("key group shares differ in length")
		}
		xs[i] = s[n-1]
		if seen[xs[i]] {
			return nil, errors.New("two key group shares are the same share")
		}
		seen[xs[i]] = true
	}
	key := make([]byte, n-1)
	for b := range key {
		var acc byte
		for i, s := range shares {
			// The Lagrange basis polynomial of xs[i], at 0.
			basis := byte(1)
			for j := range shares {
				if i != j {
					basis = gfMul(basis, gfMul(xs[j], gfInv(xs[i]^xs[j])))
				}
			}
			acc ^= gfMul(s[b], basis)
		}
		key[b] = acc
	}
	return key, nil
}

// gfMul multiplies in GF(2^8) modulo x^8+x^4+x^3+x+1, without branches on the values.
func gfMul(a, b byte) byte {
	var p byte
	for range 8 {
		p ^= -(b & 1) & a
		a = (a << 1) ^ (-(a >> 7) & 0x1b)
		b >>= 1
	}
	return p
}

// gfInv is a's multiplicative inverse, a^254 (a is never 0 here: the points differ).
func gfInv(a byte) byte {
	r := byte(1)
	for range 254 {
		r = gfMul(r, a)
	}
	return r
}
