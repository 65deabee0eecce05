package warroom

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// AdminAPI is the control source over a checkout server's admin API (and its public sale page for
// the paused flag, which fsctl serve serves from the cached read model).
type AdminAPI struct {
	Base   string
	Token  string
	Sale   string
	Client *http.Client
	// Prefix is the admin API's path (a profile's http.admin: fsctl serve's /admin/v1).
	Prefix string
	// SalePage is the sale page's path, which carries the paused flag; "" leaves the flag unread.
	SalePage string
}

// NewAdminAPI returns the control source of sale on the server at base, with the admin API at
// prefix, the sale page at salePage and the operator token.
func NewAdminAPI(base, prefix, salePage, token, saleID string, client *http.Client) *AdminAPI {
	if client == nil {
		client = &http.Client{}
	}
	return &AdminAPI{Base: strings.TrimSuffix(base, "/"), Token: token, Sale: saleID, Client: client,
		Prefix: strings.TrimSuffix(prefix, "/"), SalePage: salePage}
}

// Control reads the sale's paused flag, its waiting room and the kill switches.
func (a *AdminAPI) Control(ctx context.Context) (Control, error) {
	var c Control
	var pub struct {
		Paused bool `json:"paused"`
	}
	if a.SalePage != "" {
		if err := a.do(ctx, http.MethodGet, a.SalePage, nil, &pub); err != nil {
			return c, err
		}
		c.Paused = pub.Paused
	}
	var room struct {
		Enabled   bool    `json:"enabled"`
		Paused    bool    `json:"paused"`
		Rate      float64 `json:"admissionRate"`
		MaxActive int     `json:"maxActive"`
	}
	if err := a.do(ctx, http.MethodGet, a.Prefix+"/sales/"+url.PathEscape(a.Sale)+"/room", nil, &room); err != nil {
		return c, err
	}
	if room.Enabled {
		c.Room = &Room{Paused: room.Paused, Rate: room.Rate, MaxActive: room.MaxActive}
	}
	if err := a.do(ctx, http.MethodGet, a.Prefix+"/switches", nil, &c.Switches); err != nil {
		return c, err
	}
	return c, nil
}

// PauseSale pauses or resumes the sale.
func (a *AdminAPI) PauseSale(ctx context.Context, paused bool) error {
	verb := "/resume"
	if paused {
		verb = "/pause"
	}
	return a.do(ctx, http.MethodPost, a.Prefix+"/sales/"+url.PathEscape(a.Sale)+verb, nil, nil)
}

// SetRoom pauses or resumes admission and changes the admission rate.
func (a *AdminAPI) SetRoom(ctx context.Context, paused *bool, rate *float64) error {
	body := map[string]any{}
	if paused != nil {
		body["paused"] = *paused
	}
	if rate != nil {
		body["admissionRate"] = *rate
	}
	return a.do(ctx, http.MethodPut, a.Prefix+"/sales/"+url.PathEscape(a.Sale)+"/room", body, nil)
}

// SetSwitch throws (off=true) or resets a kill switch.
func (a *AdminAPI) SetSwitch(ctx context.Context, name string, off bool) error {
	return a.do(ctx, http.MethodPut, a.Prefix+"/switches/"+url.PathEscape(name), map[string]bool{"off": off}, nil)
}

// do sends one admin call; a non-2xx answer becomes an error carrying the server's code and message.
func (a *AdminAPI) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.Base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.Client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		var e struct{ Error, Message string }
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s %s: %s %s: %s", method, path, resp.Status, e.Error, e.Message)
		}
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return nil
}
