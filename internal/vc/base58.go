package vc

import "math/big"

// The base58btc alphabet (Bitcoin's), as Multibase's "z" prefix uses it.
const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// base58 encodes b in base58btc: each leading zero byte is a "1", the rest
// is the big-endian number in base 58.
func base58(b []byte) string {
	zeros := 0
	for zeros < len(b) && b[zeros] == 0 {
		zeros++
	}
	n := new(big.Int).SetBytes(b[zeros:])
	var out []byte
	mod, radix := new(big.Int), big.NewInt(58)
	for n.Sign() > 0 {
		n.DivMod(n, radix, mod)
		out = append(out, base58Alphabet[mod.Int64()])
	}
	for range zeros {
		out = append(out, '1')
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return string(out)
}

// unbase58 decodes base58btc; ok is false for a character outside the
// alphabet.
func unbase58(s string) (b []byte, ok bool) {
	n, radix := new(big.Int), big.NewInt(58)
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	for i := zeros; i < len(s); i++ {
		d := -1
		for j := 0; j < len(base58Alphabet); j++ {
			if base58Alphabet[j] == s[i] {
				d = j
				break
			}
		}
		if d < 0 {
			return nil, false
		}
		n.Mul(n, radix).Add(n, big.NewInt(int64(d)))
	}
	return append(make([]byte, zeros), n.Bytes()...), true
}
