package profile

import "strings"

// KeySlot is the Redis Cluster hash slot of a key: CRC16 (XMODEM) of its hash tag — the part
// between the first "{" and the next "}" when that is not empty — or of the whole key, mod 16384.
// Computed here because CLUSTER KEYSLOT only answers on a cluster.
func KeySlot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	return int(crc16(key) % 16384)
}

// SharedSlot reports whether keys all hash to the first one's slot, as the keys one Lua script
// touches must on a cluster; when they do not, it names the first key that strays and its slot.
func SharedSlot(keys []string) (slot int, stray string, straySlot int, ok bool) {
	if len(keys) == 0 {
		return 0, "", 0, true
	}
	slot = KeySlot(keys[0])
	for _, k := range keys[1:] {
		if s := KeySlot(k); s != slot {
			return slot, k, s, false
		}
	}
	return slot, "", 0, true
}

func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
