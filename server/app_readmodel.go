package server

import (
	"cmp"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/readmodel"
	"github.com/fsctl/fsctl/internal/checkout/stock"
)

// stockPartitions is the stock topic's partition count: its traffic is one small message per
// changed item per publisher flush, and every API instance reads every partition.
const stockPartitions = 1

// openReadModel wires the event-fed read model of the sale page (ReadModelEvents): the order
// consumer and the lifecycle jobs tell a snapshot publisher which items they changed, and the API
// serves the page from a view of the stock topic (package readmodel says why).
func (a *App) openReadModel(cfg AppConfig) error {
	if cfg.ReadModel != ReadModelEvents {
		return nil
	}
	topic := cmp.Or(cfg.StockTopic, events.DefaultStockTopic)
	if cfg.API {
		view, err := readmodel.NewView(readmodel.ViewConfig{Kafka: cfg.Kafka, Topic: topic}, a.rdb, a.log)
		if err != nil {
			return err
		}
		a.view = view
		a.Server.SetStockView(a.view)
	}
	if a.consumer == nil && !cfg.Workers {
		return nil
	}
	pub, err := events.NewPublisher(cfg.Kafka, topic)
	if err != nil {
		return err
	}
	a.stockPub = pub
	a.snapshots = readmodel.NewPublisher(a.rdb, a.stockPub, 0, 0, a.log)
	a.Lifecycle.StockChanged = func(item stock.ItemRef) { a.snapshots.Changed(item) }
	if a.consumer != nil {
		a.consumer.OnRecorded(func(items []stock.ItemRef) { a.snapshots.Changed(items...) })
	}
	return nil
}
