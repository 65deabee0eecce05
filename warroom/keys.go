package warroom

import "charm.land/bubbles/v2/key"

// keyMap is the dashboard's key bindings; it implements help.KeyMap.
type keyMap struct {
	PauseSale, PauseRoom, Rate, Switch1, Switch2, Switch3, Switch4, Refresh, Help, Quit key.Binding
	Yes, No                                                                             key.Binding
}

func newKeyMap() keyMap {
	return keyMap{
		PauseSale: key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause/resume sale")),
		PauseRoom: key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "pause/resume admission")),
		Rate:      key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "admission rate")),
		Switch1:   key.NewBinding(key.WithKeys("1"), key.WithHelp("1", "switch purchase")),
		Switch2:   key.NewBinding(key.WithKeys("2"), key.WithHelp("2", "switch payment")),
		Switch3:   key.NewBinding(key.WithKeys("3"), key.WithHelp("3", "switch expiry")),
		Switch4:   key.NewBinding(key.WithKeys("4"), key.WithHelp("4", "switch sweeper")),
		Refresh:   key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "refresh all now")),
		Help:      key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "more keys")),
		Quit:      key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Yes:       key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", "confirm")),
		No:        key.NewBinding(key.WithKeys("n", "N", "esc"), key.WithHelp("n/esc", "cancel")),
	}
}

// ShortHelp is the one-line help under the dashboard.
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.PauseSale, k.PauseRoom, k.Rate, k.Switch1, k.Help, k.Quit}
}

// FullHelp is the expanded help, one column per group.
func (k keyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.PauseSale, k.PauseRoom, k.Rate},
		{k.Switch1, k.Switch2, k.Switch3, k.Switch4},
		{k.Refresh, k.Help, k.Quit},
	}
}

// switchFor names the kill switch of the n-th switch binding (0 for key 1).
func (k keyMap) switchFor(b int) string {
	return [...]string{"purchase", "payment", "expiry", "sweeper"}[b]
}
