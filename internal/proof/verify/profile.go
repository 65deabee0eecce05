package verify

import "github.com/fsctl/fsctl/internal/target/profile"

// FromState is an item read through its target's profile: its row, its order counts and its
// Redis keys. The holds count where the profile declares a holds key, the paid count where it
// declares the paid query.
func FromState(st profile.ItemState) Item {
	it := Item{ID: st.Item, Quantity: st.Quantity, Stock: st.Stock, Sold: Of(st.Sold), Live: st.Live}
	if st.HasPaid {
		it.Paid = Of(st.Paid)
	}
	holds := len(st.Inventory.Shards) > 0
	for _, sh := range st.Inventory.Shards {
		c := Shard{Index: sh.Keys.Shard, Name: sh.Keys.Stock, Stock: sh.Stock}
		if sh.StockSet {
			it.Shards = append(it.Shards, c)
		} else {
			it.Missing = append(it.Missing, c)
		}
		holds = holds && sh.Keys.Holds != ""
	}
	if holds {
		it.Holds = Of(st.Holds)
	}
	return it
}
