package redisconn

import (
	"math"
	"strconv"
	"strings"
	"sync"
)

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

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// SpreadTag salts a hash tag so that shard k of n lands in the k-th n-th of the slot space: its
// slot falls within an eighth of a stride (Slots/n) of the middle of that stride. A cluster created
// with masters owning equal contiguous ranges (redis-cli --cluster create, fsctl stack up) then holds
// n ≤ masters shards on n different masters, and more shards as evenly as the masters allow,
// whatever the sale and item are called. The salt goes inside the braces ("{fs:s:i:3~41}"), so
// every key of the shard still shares one slot; a tag whose slot already lands there is returned
// unchanged. tag must contain a hash tag ("{...}"), else it is returned as it is, and so is the tag
// of an unsharded item (n ≤ 1). The answer depends only on its arguments and is cached.
func SpreadTag(tag string, k, n int) string {
	if n <= 1 || k < 0 || k >= n {
		return tag
	}
	open := strings.IndexByte(tag, '{')
	if open < 0 {
		return tag
	}
	end := strings.IndexByte(tag[open+1:], '}')
	if end <= 0 {
		return tag
	}
	end += open + 1
	ck := spreadKey{tag, k, n}
	if v, ok := spreadCache.Load(ck); ok {
		return v.(string)
	}
	stride := float64(Slots) / float64(n)
	mid := stride * (float64(k) + 0.5)
	half := max(stride/16, 0.5)
	inside := func(slot int) bool {
		d := math.Abs(float64(slot) + 0.5 - mid)
		return d <= half
	}
	out := tag
	body := tag[open+1 : end]
	if !inside(int(crc16(body) % Slots)) {
		// Each try lands with probability about 1/(8n); a million tries never all miss.
		for salt := 1; salt < 1<<20; salt++ {
			s := body + "~" + strconv.Itoa(salt)
			if inside(int(crc16(s) % Slots)) {
				out = tag[:open+1] + s + tag[end:]
				break
			}
		}
	}
	spreadCache.Store(ck, out)
	return out
}

type spreadKey struct {
	tag  string
	k, n int
}

var spreadCache sync.Map
